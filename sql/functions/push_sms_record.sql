-- push_sms_record: what the dispatcher learnt, in one round trip. Per attempt: the outbox row's
-- outcome (push_outbox_settle, lease-guarded: a row whose lease was lost is left alone and not
-- returned), the SMS row's new state, its ledger row, and the credential set's state (R-APP-3: the
-- first message taken verifies it for good; a 401 makes it invalid, with push_app.credentials_invalid
-- in the same transaction, R-PRV-4), each only when the set is still the one the attempt used.
-- Locks: outbox rows (settle), SMS rows, credential rows; the ledger rows' foreign key takes a key
-- share on the notification, which only retention's erasure holds (sql/LOCK_ORDER.md).
CREATE FUNCTION push_sms_record(p_attempts json, p_now timestamptz DEFAULT now())
RETURNS TABLE (outbox_id bigint)
LANGUAGE plpgsql AS $$
DECLARE
    v_settled bigint[];
BEGIN
    WITH a AS (
        SELECT x.*, x.ordinality AS ord
          FROM json_populate_recordset(NULL::push_sms_attempt, p_attempts) WITH ORDINALITY AS x
    )
    SELECT array_agg(st.id) INTO v_settled
      FROM push_outbox_settle('sms',
               ARRAY(SELECT a.outbox_id FROM a ORDER BY a.ord), ARRAY(SELECT a.lease_token FROM a ORDER BY a.ord),
               ARRAY(SELECT CASE WHEN a.status = 'pending' THEN 'available' ELSE 'done' END FROM a ORDER BY a.ord),
               ARRAY(SELECT a.run_at FROM a ORDER BY a.ord), ARRAY(SELECT coalesce(a.failed, false) FROM a ORDER BY a.ord),
               ARRAY(SELECT coalesce(a.error_code, CASE WHEN a.status = 'unknown' THEN 'UNKNOWN' END) FROM a ORDER BY a.ord),
               p_now) st;
    IF v_settled IS NULL THEN
        RETURN;
    END IF;

    WITH a AS (
        SELECT x.*, o.ref_id FROM json_populate_recordset(NULL::push_sms_attempt, p_attempts) x
          JOIN push_outbox o ON o.id = x.outbox_id
         WHERE x.outbox_id = ANY (v_settled)
    ), sms AS (
        UPDATE push_sms_outbox s
           SET status = a.status, provider = coalesce(a.provider, s.provider),
               provider_message_id = a.provider_message_id, error_code = a.error_code,
               provider_error_code = a.provider_error_code, error_detail = left(a.error_detail, 500),
               segments = coalesce(a.segments, s.segments), encoding = coalesce(a.encoding, s.encoding),
               request = coalesce(decode(a.request, 'base64'), s.request),
               deferrals = coalesce(a.deferrals, s.deferrals),
               sent_at = CASE WHEN a.status IN ('queued', 'unknown') THEN p_now ELSE s.sent_at END,
               finished_at = CASE WHEN a.status IN ('queued', 'failed', 'unknown') THEN p_now END,
               updated_at = p_now
          FROM a WHERE s.id = a.ref_id
        RETURNING s.id, s.notification_id, s.app_id, s.status, a.ledger, a.credentials, a.credentials_version,
                  a.provider_error_code
    ), ledger AS (
        INSERT INTO push_ledger (notification_id, device_id, kind, app_id, mode, reason)
        SELECT sms.notification_id, '00000000-0000-0000-0000-000000000000', 'sms', sms.app_id, n.mode, sms.status
          FROM sms JOIN push_notifications n ON n.id = sms.notification_id
         WHERE sms.ledger
        ON CONFLICT DO NOTHING
    ), accepted AS (
        UPDATE push_sms_credentials c
           SET state = CASE WHEN c.state = 'unverified' THEN 'verified' ELSE c.state END,
               first_accepted_at = coalesce(c.first_accepted_at, p_now), updated_at = p_now
          FROM (SELECT DISTINCT app_id, credentials_version FROM sms WHERE credentials = 'accepted') x
         WHERE c.app_id = x.app_id AND md5(c.sealed_secret || convert_to(c.config::text, 'UTF8')) = x.credentials_version
    ), bad AS (
        UPDATE push_sms_credentials c
           SET state = 'invalid', invalid_reason = coalesce(x.reason, 'unauthorized'), updated_at = p_now
          FROM (SELECT DISTINCT ON (app_id) app_id, credentials_version, provider_error_code AS reason
                  FROM sms WHERE credentials = 'invalid' ORDER BY app_id) x
         WHERE c.app_id = x.app_id AND c.state <> 'invalid'
           AND md5(c.sealed_secret || convert_to(c.config::text, 'UTF8')) = x.credentials_version
        RETURNING c.app_id, c.provider, c.invalid_reason
    )
    INSERT INTO push_events (app_id, type, payload)
    SELECT bad.app_id, 'push_app.credentials_invalid', jsonb_build_object('kind', bad.provider, 'reason', bad.invalid_reason)
      FROM bad;

    RETURN QUERY SELECT unnest(v_settled);
END
$$;
