-- push_sms_rescue: SMS rows whose lease expired (their worker died or lost the database). One that
-- was 'sending' may be with the provider: it becomes 'unknown' (never sent again), with its ledger
-- row, and its outbox row is done. The others were never written: push_outbox_rescue makes them
-- available again at once (their window, 100 years, never ends them here: the SMS deadline,
-- PushCore's, ends them EXPIRED at their next claim).
-- At most p_limit of each, oldest lease first (push_outbox_running_idx). Returns how many became
-- unknown and how many were made available again.
CREATE FUNCTION push_sms_rescue(p_limit int, p_now timestamptz DEFAULT now())
RETURNS TABLE (unknown int, rescued int)
LANGUAGE plpgsql AS $$
DECLARE
    v_unknown int;
BEGIN
    WITH stuck AS (
        SELECT o.id, o.ref_id FROM push_outbox o
         WHERE o.kind = 'sms' AND o.state = 'running' AND o.lease_expires_at < p_now
         ORDER BY o.lease_expires_at
         LIMIT p_limit
           FOR UPDATE SKIP LOCKED
    ), gone AS (
        UPDATE push_sms_outbox s
           SET status = 'unknown', error_detail = 'LEASE_EXPIRED: the request may have been written; not sent again',
               sent_at = p_now, finished_at = p_now, updated_at = p_now
          FROM stuck WHERE s.id = stuck.ref_id AND s.status = 'sending'
        RETURNING s.id, s.notification_id, s.app_id
    ), ledger AS (
        INSERT INTO push_ledger (notification_id, device_id, kind, app_id, mode, reason)
        SELECT gone.notification_id, '00000000-0000-0000-0000-000000000000', 'sms', gone.app_id, n.mode, 'unknown'
          FROM gone JOIN push_notifications n ON n.id = gone.notification_id
        ON CONFLICT DO NOTHING
    ), done AS (
        UPDATE push_outbox o
           SET state = 'done', last_error = 'LEASE_EXPIRED (unknown)', finished_at = p_now,
               lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL
          FROM stuck JOIN gone ON gone.id = stuck.ref_id
         WHERE o.id = stuck.id
        RETURNING o.id
    )
    SELECT count(*) INTO v_unknown FROM done;
    RETURN QUERY SELECT v_unknown,
        (SELECT count(*)::int FROM push_outbox_rescue('sms', 3153600000, p_limit, p_now) r WHERE r.state = 'available');
END
$$;
