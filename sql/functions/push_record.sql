-- push_record: everything a claim's batches produced, in one round trip and the caller's
-- transaction. p_batch is one JSON value (written by PGQueueStore's RecordJSON):
--   {"jobs": [{"job_id": 1, "lease_token": "...", "records": 2}, ...],
--    "deliveries": [push_delivery_record, ...],      -- job after job, "records" of each
--    "credentials": [push_credential_change, ...]}
-- For each job whose lease still holds: its delivery rows (final, or 'retrying'; a final row is
-- never overwritten, R-SEND-8), the ledger row each record names (`ledger`: 'charge', 'refund' or
-- 'none', decided by PushCore's LedgerRule; at most one of each kind per device, R-SEND-9), the
-- deactivation verdicts applied only when not older than the device's last registration
-- (R-DEV-8) with their push_device.deactivated events (R-PRV-4), credential sets marked invalid
-- (push_app.credentials_invalid, R-PRV-2/3) or accepted (R-APP-3), one successor batch job for
-- the devices still retrying (at their earliest next attempt), and the job's completion. A job
-- whose lease was lost writes nothing and answers outcome 'lease_lost'; the others still record.
-- When a notification's last batch is recorded, the answer carries every delivery's ending
-- (ending_codes: 'sent' or the error code; ending_nets: whether its ledger rows net one charge)
-- for PushCore's final decision, which push_finalize_notifications then stores.
-- A job whose notification row is missing answers 'orphaned' and writes nothing.
-- Locks (sql/LOCK_ORDER.md): every job's notification row (by id), every job row (by id), then
-- push_lock_record_rows for the whole call (devices a verdict may deactivate, their count rows,
-- the credential rows about to change), before any write.
CREATE FUNCTION push_record(p_batch json, p_now timestamptz DEFAULT now())
RETURNS TABLE (job_id bigint, outcome text, remaining_batches int, deactivated int, ending_codes text[],
               ending_nets boolean[], has_sms boolean)
LANGUAGE plpgsql AS $$
DECLARE
    v_all push_delivery_record[];
    v_changes push_credential_change[];
    v_recs push_delivery_record[];
    v_entry json;
    v_id bigint;
    v_notification uuid;
    v_job push_jobs;
    v_n push_notifications;
    v_retry_at timestamptz;
    v_retry_ids uuid[];
    v_deactivated int;
    v_remaining int;
    lo int;
    hi int := 0;
BEGIN
    v_all := ARRAY(SELECT r FROM json_populate_recordset(NULL::push_delivery_record,
                                                         coalesce(p_batch -> 'deliveries', '[]')) r);
    v_changes := ARRAY(SELECT c FROM json_populate_recordset(NULL::push_credential_change,
                                                             coalesce(p_batch -> 'credentials', '[]')) c);
    PERFORM 1 FROM push_notifications n
     WHERE n.id IN (SELECT j.notification_id FROM push_jobs j, json_array_elements(coalesce(p_batch -> 'jobs', '[]')) e
                     WHERE j.id = (e ->> 'job_id')::bigint)
     ORDER BY n.id FOR UPDATE;
    PERFORM 1 FROM push_jobs j, json_array_elements(coalesce(p_batch -> 'jobs', '[]')) e
     WHERE j.id = (e ->> 'job_id')::bigint ORDER BY j.id FOR UPDATE OF j;
    PERFORM push_lock_record_rows(
        ARRAY(SELECT r.device_id FROM unnest(v_all) r WHERE r.deactivate_reason IS NOT NULL),
        ARRAY(SELECT j.app_id FROM unnest(v_changes) WITH ORDINALITY AS c(jid, kind, change, reason, n)
                JOIN push_jobs j ON j.id = c.jid WHERE c.change = 'invalid' ORDER BY c.n),
        ARRAY(SELECT c.kind FROM unnest(v_changes) WITH ORDINALITY AS c(jid, kind, change, reason, n)
               WHERE c.change = 'invalid' AND EXISTS (SELECT 1 FROM push_jobs j WHERE j.id = c.jid) ORDER BY c.n),
        ARRAY(SELECT j.app_id FROM unnest(v_changes) WITH ORDINALITY AS c(jid, kind, change, reason, n)
                JOIN push_jobs j ON j.id = c.jid WHERE c.change = 'accepted' ORDER BY c.n),
        ARRAY(SELECT c.kind FROM unnest(v_changes) WITH ORDINALITY AS c(jid, kind, change, reason, n)
               WHERE c.change = 'accepted' AND EXISTS (SELECT 1 FROM push_jobs j WHERE j.id = c.jid) ORDER BY c.n));
    FOR v_entry IN SELECT e FROM json_array_elements(coalesce(p_batch -> 'jobs', '[]')) e LOOP
        v_id := (v_entry ->> 'job_id')::bigint;
        lo := hi + 1;
        hi := hi + (v_entry ->> 'records')::int;
        v_recs := coalesce(v_all[lo:hi], '{}');
        job_id := v_id;
        remaining_batches := NULL; deactivated := NULL; ending_codes := NULL; ending_nets := NULL; has_sms := NULL;

        SELECT j.notification_id INTO v_notification FROM push_jobs j WHERE j.id = v_id;
        SELECT * INTO v_n FROM push_notifications n WHERE n.id = v_notification;
        SELECT * INTO v_job FROM push_jobs j
         WHERE j.id = v_id AND j.lease_token = (v_entry ->> 'lease_token')::uuid AND j.state = 'running';
        IF NOT FOUND THEN
            outcome := 'lease_lost';
            RETURN NEXT;
            CONTINUE;
        END IF;
        IF v_n.id IS NULL THEN
            outcome := 'orphaned';
            RETURN NEXT;
            CONTINUE;
        END IF;

        -- One statement: every part reads the same batch rows (r) and the same snapshot.
        WITH r AS (
            SELECT * FROM unnest(v_recs)
        ), delivered AS (
            INSERT INTO push_deliveries AS del (notification_id, device_id, status, error_code, error_detail, encrypted,
                provider, provider_message_id, apns_id, attempts, failures, next_attempt_at, payload, updated_at, finished_at)
            SELECT v_n.id, r.device_id, r.status, r.error_code, left(r.error_detail, 500), coalesce(r.encrypted, false),
                   r.provider, r.provider_message_id, push_apns_id(v_n.id, r.device_id), r.attempts,
                   coalesce(r.failures, 0), CASE WHEN r.status = 'retrying' THEN r.next_attempt_at END, r.payload, p_now,
                   CASE WHEN r.status = 'retrying' THEN NULL ELSE p_now END
              FROM r
            ON CONFLICT (notification_id, device_id) DO UPDATE
               SET status = excluded.status, error_code = excluded.error_code, error_detail = excluded.error_detail,
                   encrypted = excluded.encrypted, provider = excluded.provider,
                   provider_message_id = excluded.provider_message_id, attempts = excluded.attempts,
                   failures = excluded.failures, next_attempt_at = excluded.next_attempt_at,
                   payload = excluded.payload, updated_at = excluded.updated_at, finished_at = excluded.finished_at
             WHERE del.status = 'retrying'
            RETURNING 1
        ), ledgered AS (
            -- R-SEND-9, as LedgerRule decided: the missing charge, or the refund of the acceptance charge.
            INSERT INTO push_ledger (notification_id, device_id, kind, app_id, mode, reason)
            SELECT v_n.id, r.device_id, r.ledger, v_n.app_id, v_n.mode, coalesce(r.error_code, 'sent')
              FROM r WHERE r.ledger IN ('charge', 'refund')
            ON CONFLICT DO NOTHING
            RETURNING 1
        ), off AS (
            -- R-PRV-1/2 with R-DEV-8 ordering: a verdict older than the last registration is ignored.
            UPDATE push_devices d
               SET active = false, deactivated_at = p_now, deactivation_reason = r.deactivate_reason
              FROM r
             WHERE r.deactivate_reason IS NOT NULL AND d.id = r.device_id AND d.active
               AND d.last_registered_at < coalesce(r.verdict_at, p_now)
            RETURNING d.id, d.app_id, d.mode, d.user_id, d.deactivation_reason
        ), counted AS (
            UPDATE push_device_counts c SET active_count = greatest(c.active_count - o.n, 0)
              FROM (SELECT off.app_id, off.mode, count(*) AS n FROM off GROUP BY off.app_id, off.mode) o
             WHERE c.app_id = o.app_id AND c.mode = o.mode
            RETURNING 1
        ), events AS (
            -- R-PRV-4: the event is written by the transaction that makes the change.
            INSERT INTO push_events (app_id, type, payload)
            SELECT off.app_id, 'push_device.deactivated',
                   jsonb_build_object('device_id', off.id, 'user_id', off.user_id, 'mode', off.mode,
                                      'reason', off.deactivation_reason, 'notification_id', v_n.id)
              FROM off
            RETURNING 1
        )
        SELECT count(*) INTO v_deactivated FROM events;

        WITH bad AS (
            UPDATE push_credentials c SET state = 'invalid', invalid_reason = x.reason, updated_at = p_now
              FROM unnest(v_changes) x
             WHERE x.job_id = v_id AND x.change = 'invalid'
               AND c.app_id = v_n.app_id AND c.kind = x.kind AND c.state <> 'invalid'
            RETURNING c.app_id, c.kind, c.invalid_reason
        )
        INSERT INTO push_events (app_id, type, payload)
        SELECT bad.app_id, 'push_app.credentials_invalid', jsonb_build_object('kind', bad.kind, 'reason', bad.invalid_reason)
          FROM bad;
        UPDATE push_credentials c
           SET state = CASE WHEN c.state = 'unverified' THEN 'verified' ELSE c.state END,
               first_accepted_at = coalesce(c.first_accepted_at, p_now), updated_at = p_now
         WHERE c.app_id = v_n.app_id
           AND c.kind IN (SELECT x.kind FROM unnest(v_changes) x WHERE x.job_id = v_id AND x.change = 'accepted')
           AND (c.first_accepted_at IS NULL OR c.state = 'unverified');

        SELECT min(u.next_attempt_at), array_agg(u.device_id ORDER BY u.device_id) INTO v_retry_at, v_retry_ids
          FROM unnest(v_recs) u WHERE u.status = 'retrying';
        IF v_retry_ids IS NOT NULL THEN
            INSERT INTO push_jobs (kind, notification_id, app_id, device_ids, priority, run_at)
            VALUES ('batch', v_n.id, v_n.app_id, v_retry_ids, v_job.priority, v_retry_at);
            v_remaining := v_n.remaining_batches;
        ELSE
            v_remaining := greatest(v_n.remaining_batches - 1, 0);
            UPDATE push_notifications n SET remaining_batches = v_remaining WHERE n.id = v_n.id;
        END IF;

        UPDATE push_jobs j SET state = 'completed', finalized_at = p_now, lease_token = NULL,
                               lease_expires_at = NULL, lease_owner = NULL
         WHERE j.id = v_id;

        outcome := 'recorded';
        remaining_batches := v_remaining;
        deactivated := v_deactivated;
        IF v_remaining = 0 THEN
            -- Every delivery's ending, with its net from the ledger (one pass over each side by the
            -- notification's primary-key prefix).
            SELECT coalesce(array_agg(CASE WHEN d.status = 'sent' THEN 'sent' ELSE d.error_code END ORDER BY d.device_id), '{}'),
                   coalesce(array_agg(coalesce(l.nets, false) ORDER BY d.device_id), '{}')
              INTO ending_codes, ending_nets
              FROM push_deliveries d
              LEFT JOIN (SELECT g.device_id, bool_or(g.kind = 'charge') AND NOT bool_or(g.kind = 'refund') AS nets
                           FROM push_ledger g WHERE g.notification_id = v_n.id GROUP BY g.device_id) l
                ON l.device_id = d.device_id
             WHERE d.notification_id = v_n.id;
        END IF;
        has_sms := v_n.sms_phone IS NOT NULL;
        RETURN NEXT;
    END LOOP;
END
$$;
