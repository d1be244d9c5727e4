-- The previous release's entry point: this release's worker calls push_start_notifications,
-- push_record and push_finalize_notifications instead (sql/0010). Kept, unchanged, for workers
-- below schema 10; dropped at the contract step.
--
-- push_record_batch, as in 0005, with the lock order: the notification row, then the job with its
-- lease check, then push_lock_record_rows for this batch. (0005 locked the job first and the rest
-- in plan order.) Same signature and results. A job without a notification row: ORPHANED_JOB.
CREATE OR REPLACE FUNCTION push_record_batch(
    p_job_id bigint, p_lease_token uuid,
    p_device_ids uuid[], p_statuses text[], p_error_codes text[], p_error_details text[],
    p_encrypted boolean[], p_providers text[], p_message_ids text[], p_attempts int[], p_failures int[],
    p_next_attempt_at timestamptz[], p_payloads bytea[], p_nets_charge boolean[],
    p_deactivate_reasons text[], p_verdict_at timestamptz[],
    p_invalid_credentials text[], p_invalid_reasons text[], p_accepted_credentials text[],
    p_now timestamptz DEFAULT now())
RETURNS TABLE (remaining_batches int, deactivated int, endings text[], has_sms boolean)
LANGUAGE plpgsql AS $$
DECLARE
    v_job push_jobs;
    v_n push_notifications;
    v_retry_at timestamptz;
    v_retry_ids uuid[];
    v_deactivated int := 0;
    v_remaining int;
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
    PERFORM push_lock_record_rows(
        ARRAY(SELECT u.id FROM unnest(p_device_ids, p_deactivate_reasons) AS u(id, reason) WHERE u.reason IS NOT NULL),
        array_fill(v_n.app_id, ARRAY[coalesce(cardinality(p_invalid_credentials), 0)]), coalesce(p_invalid_credentials, '{}'),
        array_fill(v_n.app_id, ARRAY[coalesce(cardinality(p_accepted_credentials), 0)]), coalesce(p_accepted_credentials, '{}'));

    -- One statement: every part reads the same batch rows (r) and the same snapshot.
    WITH r AS (
        SELECT * FROM unnest(p_device_ids, p_statuses, p_error_codes, p_error_details, p_encrypted, p_providers,
                             p_message_ids, p_attempts, p_failures, p_next_attempt_at, p_payloads, p_nets_charge,
                             p_deactivate_reasons, p_verdict_at)
            AS u(device_id, status, error_code, error_detail, encrypted, provider, message_id, attempts, failures,
                 next_attempt_at, payload, nets_charge, deactivate_reason, verdict_at)
    ), delivered AS (
        INSERT INTO push_deliveries AS del (notification_id, device_id, status, error_code, error_detail, encrypted,
            provider, provider_message_id, apns_id, attempts, failures, next_attempt_at, payload, updated_at, finished_at)
        SELECT v_n.id, r.device_id, r.status, r.error_code, left(r.error_detail, 500), coalesce(r.encrypted, false),
               r.provider, r.message_id, push_apns_id(v_n.id, r.device_id), r.attempts, coalesce(r.failures, 0),
               CASE WHEN r.status = 'retrying' THEN r.next_attempt_at END, r.payload, p_now,
               CASE WHEN r.status = 'retrying' THEN NULL ELSE p_now END
          FROM r
        ON CONFLICT (notification_id, device_id) DO UPDATE
           SET status = excluded.status, error_code = excluded.error_code, error_detail = excluded.error_detail,
               encrypted = excluded.encrypted, provider = excluded.provider,
               provider_message_id = excluded.provider_message_id, attempts = excluded.attempts,
               failures = excluded.failures,
               next_attempt_at = excluded.next_attempt_at, payload = excluded.payload,
               updated_at = excluded.updated_at, finished_at = excluded.finished_at
         WHERE del.status = 'retrying'
        RETURNING 1
    ), charged AS (
        -- R-SEND-9: a missing charge for what nets one ...
        INSERT INTO push_ledger (notification_id, device_id, kind, app_id, mode, reason)
        SELECT v_n.id, r.device_id, 'charge', v_n.app_id, v_n.mode, coalesce(r.error_code, 'sent')
          FROM r WHERE r.nets_charge
        ON CONFLICT DO NOTHING
        RETURNING 1
    ), refunded AS (
        -- ... and a refund of the acceptance charge for what nets zero.
        INSERT INTO push_ledger (notification_id, device_id, kind, app_id, mode, reason)
        SELECT v_n.id, r.device_id, 'refund', v_n.app_id, v_n.mode, r.error_code
          FROM r
          -- LIMIT keeps the subquery a probe per row (an EXISTS would be planned as a join again).
          JOIN LATERAL (SELECT 1 FROM push_ledger c
                         WHERE c.notification_id = v_n.id AND c.device_id = r.device_id AND c.kind = 'charge'
                         LIMIT 1) charge ON true
         WHERE r.nets_charge = false
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
          FROM (SELECT app_id, mode, count(*) AS n FROM off GROUP BY app_id, mode) o
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
        UPDATE push_credentials c SET state = 'invalid', invalid_reason = r.reason, updated_at = p_now
          FROM unnest(p_invalid_credentials, p_invalid_reasons) AS r(kind, reason)
         WHERE c.app_id = v_n.app_id AND c.kind = r.kind AND c.state <> 'invalid'
        RETURNING c.app_id, c.kind, c.invalid_reason
    )
    INSERT INTO push_events (app_id, type, payload)
    SELECT app_id, 'push_app.credentials_invalid', jsonb_build_object('kind', kind, 'reason', invalid_reason)
      FROM bad;
    UPDATE push_credentials c
       SET state = CASE WHEN c.state = 'unverified' THEN 'verified' ELSE c.state END,
           first_accepted_at = coalesce(c.first_accepted_at, p_now), updated_at = p_now
     WHERE c.app_id = v_n.app_id AND c.kind = ANY (p_accepted_credentials)
       AND (c.first_accepted_at IS NULL OR c.state = 'unverified');

    SELECT min(u.at), array_agg(u.id ORDER BY u.id) INTO v_retry_at, v_retry_ids
      FROM unnest(p_device_ids, p_statuses, p_next_attempt_at) AS u(id, status, at) WHERE u.status = 'retrying';
    IF v_retry_ids IS NOT NULL THEN
        INSERT INTO push_jobs (kind, notification_id, app_id, device_ids, priority, run_at)
        VALUES ('batch', v_n.id, v_n.app_id, v_retry_ids, v_job.priority, v_retry_at);
        v_remaining := v_n.remaining_batches;
    ELSE
        v_remaining := greatest(v_n.remaining_batches - 1, 0);
        UPDATE push_notifications SET remaining_batches = v_remaining WHERE id = v_n.id;
    END IF;

    UPDATE push_jobs SET state = 'completed', finalized_at = p_now, lease_token = NULL,
                         lease_expires_at = NULL, lease_owner = NULL
     WHERE id = p_job_id;

    remaining_batches := v_remaining;
    deactivated := v_deactivated;
    IF v_remaining = 0 THEN
        SELECT coalesce(array_agg(CASE WHEN d.status = 'sent' THEN 'sent' ELSE d.error_code END), '{}')
          INTO endings FROM push_deliveries d WHERE d.notification_id = v_n.id;
    END IF;
    has_sms := v_n.sms_phone IS NOT NULL;
    RETURN NEXT;
END
$$;
