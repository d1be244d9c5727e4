-- push_start_notifications: the send time of several notification jobs (R-SEND-2), each under its
-- own lease, one answer per job, in the order given. Per job (p_job_ids[i], p_lease_tokens[i]):
--   outcome 'lease_lost' when the lease no longer holds (nothing written for that job);
--   outcome 'not_pending' (with the notification's status) when it already started or ended;
--   outcome 'started': require_encryption read once and written as the notification's
--   `encrypted`; the audience resolved (R-SEND-1); charged devices no longer targeted get a
--   DEVICE_GONE delivery row and the ledger row p_gone_ledger names ('refund', or 'none'), which
--   is PushCore's LedgerRule for a charged DEVICE_GONE, passed by the worker: this function decides
--   who is gone (in the transaction that resolves the audience, R-SEND-2) and writes what it is
--   told; then either this job becomes the single batch (audience <= p_batch_size, returned as
--   inline_device_ids) or the audience is split into batch jobs any worker can claim.
-- A job whose notification row is missing answers 'orphaned' (the worker sets it aside).
-- Locks (sql/LOCK_ORDER.md): every job's notification row (by id), then every job row (by id),
-- before any write; the per-job reads then find them held.
CREATE FUNCTION push_start_notifications(p_job_ids bigint[], p_lease_tokens uuid[], p_batch_size int,
                                         p_gone_ledger text, p_now timestamptz DEFAULT now())
RETURNS TABLE (job_id bigint, outcome text, status text, inline_device_ids uuid[], batch_jobs int, gone int,
               encrypted boolean)
LANGUAGE plpgsql AS $$
DECLARE
    i int;
    v_notification uuid;
    v_job push_jobs;
    v_n push_notifications;
    v_app push_apps;
    v_targets uuid[];
    v_gone int;
    v_batches int;
    v_encrypted boolean;
BEGIN
    IF p_gone_ledger IS NULL OR p_gone_ledger NOT IN ('none', 'refund') THEN
        RAISE EXCEPTION 'VALIDATION_ERROR: p_gone_ledger must be none or refund (a gone device was charged)';
    END IF;
    IF coalesce(cardinality(p_job_ids), 0) <> coalesce(cardinality(p_lease_tokens), 0) THEN
        RAISE EXCEPTION 'VALIDATION_ERROR: one lease token per job';
    END IF;
    PERFORM 1 FROM push_notifications n
     WHERE n.id IN (SELECT j.notification_id FROM push_jobs j WHERE j.id = ANY (p_job_ids))
     ORDER BY n.id FOR UPDATE;
    PERFORM 1 FROM push_jobs j WHERE j.id = ANY (p_job_ids) ORDER BY j.id FOR UPDATE;
    FOR i IN 1 .. coalesce(cardinality(p_job_ids), 0) LOOP
        job_id := p_job_ids[i];
        status := NULL; inline_device_ids := NULL; batch_jobs := NULL; gone := NULL; encrypted := NULL;
        SELECT j.notification_id INTO v_notification FROM push_jobs j WHERE j.id = p_job_ids[i];
        SELECT * INTO v_n FROM push_notifications n WHERE n.id = v_notification;
        SELECT * INTO v_job FROM push_jobs j
         WHERE j.id = p_job_ids[i] AND j.lease_token = p_lease_tokens[i] AND j.state = 'running';
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
        IF v_n.status <> 'pending' THEN
            outcome := 'not_pending';
            status := v_n.status;
            RETURN NEXT;
            CONTINUE;
        END IF;
        SELECT * INTO v_app FROM push_apps a WHERE a.id = v_n.app_id;
        v_encrypted := coalesce(v_app.require_encryption, false);

        SELECT coalesce(array_agg(d.id ORDER BY d.id), '{}') INTO v_targets
          FROM push_devices d
         WHERE v_app.deleted_at IS NULL
           AND d.app_id = v_n.app_id AND d.mode = v_n.mode AND d.active AND d.user_id = ANY (v_n.user_ids)
           AND (v_n.device_ids IS NULL OR d.id = ANY (v_n.device_ids));

        WITH gone_devices AS (
            SELECT l.device_id FROM push_ledger l
             WHERE l.notification_id = v_n.id AND l.kind = 'charge' AND NOT (l.device_id = ANY (v_targets))
        ), delivered AS (
            INSERT INTO push_deliveries (notification_id, device_id, status, error_code, error_detail, apns_id, finished_at)
            SELECT v_n.id, g.device_id, 'failed', 'DEVICE_GONE',
                   'charged at acceptance, no longer targeted at send time', push_apns_id(v_n.id, g.device_id), p_now
              FROM gone_devices g
            ON CONFLICT DO NOTHING
            RETURNING device_id
        ), ledgered AS (
            INSERT INTO push_ledger (notification_id, device_id, kind, app_id, mode, reason)
            SELECT v_n.id, d.device_id, p_gone_ledger, v_n.app_id, v_n.mode, 'DEVICE_GONE' FROM delivered d
             WHERE p_gone_ledger <> 'none'
            ON CONFLICT DO NOTHING
            RETURNING 1
        )
        SELECT count(*) INTO v_gone FROM delivered;

        IF cardinality(v_targets) <= p_batch_size THEN
            v_batches := CASE WHEN cardinality(v_targets) = 0 THEN 0 ELSE 1 END;
            UPDATE push_jobs j SET kind = 'batch', device_ids = v_targets WHERE j.id = p_job_ids[i];
            inline_device_ids := v_targets;
        ELSE
            INSERT INTO push_jobs (kind, notification_id, app_id, device_ids, priority, run_at)
            SELECT 'batch', v_n.id, v_n.app_id, v_targets[g * p_batch_size + 1 : (g + 1) * p_batch_size],
                   v_job.priority, p_now
              FROM generate_series(0, (cardinality(v_targets) - 1) / p_batch_size) AS g;
            GET DIAGNOSTICS v_batches = ROW_COUNT;
            UPDATE push_jobs j SET state = 'completed', finalized_at = p_now, lease_token = NULL,
                                   lease_expires_at = NULL, lease_owner = NULL
             WHERE j.id = p_job_ids[i];
            PERFORM pg_notify('pushfleet_jobs', '');
        END IF;

        UPDATE push_notifications n
           SET status = 'sending', encrypted = v_encrypted, started_at = p_now, remaining_batches = v_batches
         WHERE n.id = v_n.id;
        outcome := 'started';
        status := 'sending';
        batch_jobs := v_batches;
        gone := v_gone;
        encrypted := v_encrypted;
        RETURN NEXT;
    END LOOP;
END
$$;
