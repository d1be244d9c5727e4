-- pushfleet SQL functions: the API's enqueue and cancel, the worker's send-time start and batch
-- record, and device registration. Each is one round trip and runs in the caller's transaction.
-- Errors raised here carry a stable code as the first word of the message ("PUSH_DEVICE_LIMIT: ...")
-- and SQLSTATE P0001.

-- Stable apns-id per (notification, device): the same across retries and worker crashes.
CREATE FUNCTION push_apns_id(p_notification uuid, p_device uuid) RETURNS uuid
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT md5(p_notification::text || ':' || p_device::text)::uuid
$$;

-- Expiry (R-SEND-10): max(accepted, send_at) + ttl.
CREATE FUNCTION push_expires_at(p_accepted timestamptz, p_send_at timestamptz, p_ttl int) RETURNS timestamptz
LANGUAGE sql IMMUTABLE AS $$
    SELECT greatest(p_accepted, coalesce(p_send_at, p_accepted)) + make_interval(secs => p_ttl)
$$;

-- push_enqueue: accept one notification (R-SEND-1, R-SEND-7, R-SEND-9, R-SEND-13).
-- Refuses only what can never fit (content over 4096 bytes); the exact size rule lives in PushCore
-- and runs before this call (the CLI, or an API through it). Returns the notification id and
-- whether it was created (false: the idempotency key named an earlier notification, returned as is).
-- Charges, in the same transaction, each device the policy would deliver to now. Sends one NOTIFY
-- per call (delivered at commit, coalesced per transaction), never one per row.
CREATE FUNCTION push_enqueue(
    p_app_id uuid, p_mode text, p_user_ids text[], p_device_ids uuid[],
    p_title text, p_body text, p_data text, p_badge int, p_sound text, p_thread_id text,
    p_collapse_key text, p_priority text, p_send_at timestamptz, p_ttl int,
    p_idempotency_key text, p_sms_phone text, p_sms_text text,
    p_now timestamptz DEFAULT now())
RETURNS TABLE (notification_id uuid, created boolean)
LANGUAGE plpgsql AS $$
DECLARE
    v_app push_apps;
    v_id uuid;
    v_ttl int := coalesce(p_ttl, 2419200);
    v_priority text := coalesce(p_priority, 'high');
    v_content_bytes int;
BEGIN
    SELECT * INTO v_app FROM push_apps WHERE id = p_app_id AND deleted_at IS NULL;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'NOT_FOUND: push app % does not exist', p_app_id;
    END IF;
    IF p_mode IS NULL OR p_mode NOT IN ('test', 'live') THEN
        RAISE EXCEPTION 'VALIDATION_ERROR: mode must be test or live';
    END IF;
    IF p_user_ids IS NULL OR cardinality(p_user_ids) = 0 THEN
        RAISE EXCEPTION 'VALIDATION_ERROR: at least one user is required';
    END IF;
    IF v_priority NOT IN ('high', 'normal') THEN
        RAISE EXCEPTION 'VALIDATION_ERROR: priority must be high or normal';
    END IF;
    IF v_ttl < 0 OR v_ttl > 2419200 THEN
        RAISE EXCEPTION 'VALIDATION_ERROR: ttl must be between 0 and 2419200 seconds';
    END IF;
    IF p_collapse_key IS NOT NULL AND octet_length(p_collapse_key) > 64 THEN
        RAISE EXCEPTION 'VALIDATION_ERROR: collapse_key is % bytes, at most 64 allowed (R-SEND-13)', octet_length(p_collapse_key);
    END IF;
    IF p_data IS NOT NULL AND json_typeof(p_data::json) <> 'object' THEN
        RAISE EXCEPTION 'VALIDATION_ERROR: data must be a JSON object';
    END IF;
    IF (p_sms_phone IS NULL) <> (p_sms_text IS NULL) THEN
        RAISE EXCEPTION 'VALIDATION_ERROR: an SMS fallback needs both a phone number and a text';
    END IF;
    v_content_bytes := coalesce(octet_length(p_title), 0) + coalesce(octet_length(p_body), 0)
                     + coalesce(octet_length(p_data), 0);
    IF v_content_bytes > 4096 THEN
        RAISE EXCEPTION 'PUSH_PAYLOAD_TOO_LARGE: content is % bytes and can never fit in 4096; cut at least % bytes',
            v_content_bytes, v_content_bytes - 4096;
    END IF;

    INSERT INTO push_notifications AS n (app_id, mode, user_ids, device_ids, title, body, data, badge, sound,
        thread_id, collapse_key, priority, ttl_seconds, send_at, accepted_at, expires_at, idempotency_key,
        sms_phone, sms_text)
    VALUES (p_app_id, p_mode, p_user_ids, p_device_ids, p_title, p_body, p_data, p_badge, p_sound,
        p_thread_id, p_collapse_key, v_priority, v_ttl, p_send_at, p_now,
        push_expires_at(p_now, p_send_at, v_ttl), p_idempotency_key, p_sms_phone, p_sms_text)
    ON CONFLICT (app_id, mode, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
    RETURNING n.id INTO v_id;

    IF v_id IS NULL THEN
        RETURN QUERY SELECT n.id, false FROM push_notifications n
            WHERE n.app_id = p_app_id AND n.mode = p_mode AND n.idempotency_key = p_idempotency_key;
        RETURN;
    END IF;

    -- Acceptance charges (R-SEND-9): what the policy would deliver to now (push_devices_audience_idx).
    INSERT INTO push_ledger (notification_id, device_id, kind, app_id, mode, reason)
    SELECT v_id, d.id, 'charge', p_app_id, p_mode, 'accepted'
      FROM push_devices d
     WHERE d.app_id = p_app_id AND d.mode = p_mode AND d.active AND d.user_id = ANY (p_user_ids)
       AND (p_device_ids IS NULL OR d.id = ANY (p_device_ids))
       AND (d.public_key IS NOT NULL OR d.platform = 'web' OR NOT v_app.require_encryption);

    INSERT INTO push_jobs (kind, notification_id, app_id, run_at)
    VALUES ('notification', v_id, p_app_id, greatest(p_now, coalesce(p_send_at, p_now)));

    PERFORM pg_notify('pushfleet_jobs', '');
    RETURN QUERY SELECT v_id, true;
END
$$;

-- push_cancel: cancel a notification whose send time has not come (its job not yet taken up).
-- Refunds every acceptance charge. Returns false when it is too late (already started or final).
CREATE FUNCTION push_cancel(p_notification_id uuid, p_now timestamptz DEFAULT now())
RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    v_n push_notifications;
BEGIN
    SELECT * INTO v_n FROM push_notifications WHERE id = p_notification_id FOR UPDATE;
    IF NOT FOUND OR v_n.status <> 'pending' THEN
        RETURN false;
    END IF;
    -- The notification job must still be waiting; a running one belongs to a worker.
    UPDATE push_jobs SET state = 'cancelled', finalized_at = p_now
     WHERE notification_id = p_notification_id AND kind = 'notification' AND state = 'available';
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    UPDATE push_notifications SET status = 'cancelled', error_code = 'CANCELLED', finished_at = p_now
     WHERE id = p_notification_id;
    INSERT INTO push_ledger (notification_id, device_id, kind, app_id, mode, reason)
    SELECT notification_id, device_id, 'refund', app_id, mode, 'CANCELLED'
      FROM push_ledger WHERE notification_id = p_notification_id AND kind = 'charge'
    ON CONFLICT DO NOTHING;
    RETURN true;
END
$$;

-- push_start_notification: the send time of a notification (R-SEND-2), under the job's lease.
-- Reads require_encryption once and writes it as the notification's `encrypted`; resolves the
-- audience (R-SEND-1); writes DEVICE_GONE deliveries and refunds for charged devices no longer
-- targeted; then either turns this job into the single device batch (audience <= p_batch_size,
-- returned as inline_device_ids) or splits the audience into batch jobs any worker can claim.
-- An empty audience returns inline_device_ids = '{}' and the notification awaits finalization by
-- the caller (push_finalize_notification) in the same transaction.
CREATE FUNCTION push_start_notification(p_job_id bigint, p_lease_token uuid, p_batch_size int,
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
    SELECT * INTO v_job FROM push_jobs
     WHERE id = p_job_id AND lease_token = p_lease_token AND state = 'running' FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'LEASE_LOST: job % is no longer held by this lease', p_job_id;
    END IF;
    SELECT * INTO v_n FROM push_notifications WHERE id = v_job.notification_id FOR UPDATE;
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

-- push_record_batch: everything one device batch produced, in one round trip, guarded by the
-- claim's lease token (a worker that lost its lease records nothing: LEASE_LOST).
-- Per device (parallel arrays, one element each): the delivery row (final or 'retrying'), the
-- ledger move that makes it net what PushCore's LedgerRule decided (p_nets_charge: true = exactly
-- one charge, false = zero, NULL = not final yet), and a deactivation verdict (R-PRV-1/2) applied
-- only when the verdict is not older than the device's last registration (R-DEV-8), with its
-- push_device.deactivated event (R-PRV-4). Credential kinds to mark invalid (R-PRV-2/3) emit
-- push_app.credentials_invalid; kinds accepted live get their first acceptance time (R-APP-3).
-- Devices still retrying go to one successor batch job at their earliest next attempt; otherwise
-- the notification's remaining batch count drops. Returns the remaining count and, when it is
-- zero, every delivery's ending ('sent' or its error code) so the caller can finalize.
CREATE FUNCTION push_record_batch(
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
    SELECT * INTO v_job FROM push_jobs
     WHERE id = p_job_id AND lease_token = p_lease_token AND state = 'running' FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'LEASE_LOST: job % is no longer held by this lease', p_job_id;
    END IF;
    SELECT * INTO v_n FROM push_notifications WHERE id = v_job.notification_id FOR UPDATE;

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
          JOIN push_ledger c ON c.notification_id = v_n.id AND c.device_id = r.device_id AND c.kind = 'charge'
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

-- push_finalize_notification: the notification's final state, decided by PushCore
-- (NotificationOutcome, R-SEND-6) from the endings push_record_batch returned. device_count is the
-- number of deliveries that net one charge (R-SEND-9). 'sms_fallback' queues the SMS once.
CREATE FUNCTION push_finalize_notification(p_notification_id uuid, p_status text, p_error_code text,
                                           p_now timestamptz DEFAULT now())
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE push_notifications n
       SET status = p_status, error_code = p_error_code, finished_at = p_now, remaining_batches = 0,
           device_count = (SELECT count(*) FROM push_ledger c
                            WHERE c.notification_id = n.id AND c.kind = 'charge'
                              AND NOT EXISTS (SELECT 1 FROM push_ledger r WHERE r.notification_id = n.id
                                                 AND r.device_id = c.device_id AND r.kind = 'refund'))
     WHERE n.id = p_notification_id AND n.finished_at IS NULL;
    IF p_status = 'sms_fallback' THEN
        INSERT INTO push_sms_outbox (notification_id, app_id, phone, text)
        SELECT id, app_id, sms_phone, sms_text FROM push_notifications
         WHERE id = p_notification_id AND sms_phone IS NOT NULL
        ON CONFLICT (notification_id) DO NOTHING;
    END IF;
END
$$;
