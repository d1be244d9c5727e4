-- The previous release's entry point: this release's worker calls push_start_notifications,
-- push_record and push_finalize_notifications instead (sql/0010). Kept, unchanged, for workers
-- below schema 10; dropped at the contract step.
--
-- push_start_notification, as in 0002, with the lock order: the notification row first (its id read
-- from the job without a lock), then the job with its lease check. (0002 locked the job first, so
-- a push_cancel locking the notification then the job deadlocked with it at the send time.)
-- A job whose notification row is missing raises ORPHANED_JOB (the worker sets it aside at once).
CREATE OR REPLACE FUNCTION push_start_notification(p_job_id bigint, p_lease_token uuid, p_batch_size int,
                                                   p_now timestamptz DEFAULT now())
RETURNS TABLE (inline_device_ids uuid[], batch_jobs int, gone int, encrypted boolean)
LANGUAGE plpgsql AS $$
DECLARE
    v_job push_jobs;
    v_n push_notifications;
    v_app push_apps;
    v_targets uuid[];
    v_gone int;
    v_batches int;
    v_encrypted boolean;
BEGIN
    SELECT * INTO v_n FROM push_notifications
     WHERE id = (SELECT j.notification_id FROM push_jobs j WHERE j.id = p_job_id) FOR UPDATE;
    SELECT * INTO v_job FROM push_jobs
     WHERE id = p_job_id AND lease_token = p_lease_token AND state = 'running' FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'LEASE_LOST: job % is no longer held by this lease', p_job_id;
    END IF;
    IF v_n.id IS NULL THEN
        RAISE EXCEPTION 'ORPHANED_JOB: job % has no notification row', p_job_id;
    END IF;
    IF v_n.status <> 'pending' THEN
        RAISE EXCEPTION 'NOT_PENDING: notification % is %', v_n.id, v_n.status;
    END IF;
    SELECT * INTO v_app FROM push_apps WHERE id = v_n.app_id;
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
    )
    INSERT INTO push_ledger (notification_id, device_id, kind, app_id, mode, reason)
    SELECT v_n.id, device_id, 'refund', v_n.app_id, v_n.mode, 'DEVICE_GONE' FROM delivered
    ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS v_gone = ROW_COUNT;

    IF cardinality(v_targets) <= p_batch_size THEN
        v_batches := CASE WHEN cardinality(v_targets) = 0 THEN 0 ELSE 1 END;
        UPDATE push_jobs SET kind = 'batch', device_ids = v_targets WHERE id = p_job_id;
        inline_device_ids := v_targets;
    ELSE
        INSERT INTO push_jobs (kind, notification_id, app_id, device_ids, priority, run_at)
        SELECT 'batch', v_n.id, v_n.app_id, v_targets[g * p_batch_size + 1 : (g + 1) * p_batch_size],
               v_job.priority, p_now
          FROM generate_series(0, (cardinality(v_targets) - 1) / p_batch_size) AS g;
        GET DIAGNOSTICS v_batches = ROW_COUNT;
        UPDATE push_jobs SET state = 'completed', finalized_at = p_now, lease_token = NULL,
                             lease_expires_at = NULL, lease_owner = NULL
         WHERE id = p_job_id;
        inline_device_ids := NULL;
        PERFORM pg_notify('pushfleet_jobs', '');
    END IF;

    UPDATE push_notifications
       SET status = 'sending', encrypted = v_encrypted, started_at = p_now, remaining_batches = v_batches
     WHERE id = v_n.id;
    batch_jobs := v_batches;
    gone := v_gone;
    encrypted := v_encrypted;
    RETURN NEXT;
END
$$;
