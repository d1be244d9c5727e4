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
