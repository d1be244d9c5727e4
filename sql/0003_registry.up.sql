-- Device registry (R-DEV-1..8). Field validation (token alphabet, key on the curve, subscription
-- endpoint) happens in Swift before this call (PushCore / PushCrypto); these functions hold the
-- invariants that concurrent callers could otherwise break.

-- push_register_device: the upsert on (app, mode, token) or (app, mode, endpoint) (R-DEV-2).
-- p_key_action: 'keep' (field absent: keep the stored key, R-DEV-4), 'set' (p_public_key, p_kid),
-- 'remove' (explicit null; fires no webhook). A new device, or a reactivated one (R-DEV-7), counts
-- against the app's limit first (R-DEV-6: PUSH_DEVICE_LIMIT), then the user's 20 (R-DEV-5: the
-- least recently registered are deactivated with DEVICE_LIMIT events).
-- Concurrency: new devices of one (app, mode) serialize on their push_device_counts row; one
-- user's registrations serialize on a transaction advisory lock; the unique indexes do the rest.
CREATE FUNCTION push_register_device(
    p_app_id uuid, p_mode text, p_platform text, p_token text, p_endpoint text, p_p256dh bytea,
    p_auth_secret bytea, p_user_id text, p_apns_environment text, p_key_action text,
    p_public_key bytea, p_kid text, p_app_limit bigint DEFAULT NULL, p_user_limit int DEFAULT 20)
RETURNS TABLE (device_id uuid, created boolean, reactivated boolean, evicted uuid[])
LANGUAGE plpgsql AS $$
DECLARE
    v_now timestamptz := clock_timestamp();
    v_dev push_devices;
    v_limit bigint := coalesce(p_app_limit, CASE WHEN p_mode = 'live' THEN 1000000 ELSE 1000 END);
    v_count bigint;
    v_created boolean := false;
    v_reactivated boolean := false;
    v_evicted uuid[];
BEGIN
    IF p_key_action NOT IN ('keep', 'set', 'remove') THEN
        RAISE EXCEPTION 'VALIDATION_ERROR: key action must be keep, set or remove';
    END IF;
    PERFORM 1 FROM push_apps WHERE id = p_app_id AND deleted_at IS NULL;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'NOT_FOUND: push app % does not exist', p_app_id;
    END IF;
    -- One user's registrations in turn (R-DEV-5).
    PERFORM pg_advisory_xact_lock(hashtextextended(p_app_id::text || '/' || p_mode || '/' || p_user_id, 0));

    IF p_token IS NOT NULL THEN
        SELECT * INTO v_dev FROM push_devices
         WHERE app_id = p_app_id AND mode = p_mode AND token = p_token FOR UPDATE;
    ELSE
        SELECT * INTO v_dev FROM push_devices
         WHERE app_id = p_app_id AND mode = p_mode AND endpoint = p_endpoint FOR UPDATE;
    END IF;

    IF v_dev.id IS NULL OR NOT v_dev.active THEN
        -- R-DEV-6, before R-DEV-5: the app's active count, kept without scanning devices.
        INSERT INTO push_device_counts (app_id, mode) VALUES (p_app_id, p_mode) ON CONFLICT DO NOTHING;
        SELECT active_count INTO v_count FROM push_device_counts
         WHERE app_id = p_app_id AND mode = p_mode FOR UPDATE;
        IF v_count >= v_limit THEN
            RAISE EXCEPTION 'PUSH_DEVICE_LIMIT: the app has % active % devices, the limit', v_count, p_mode;
        END IF;
        IF v_dev.id IS NULL THEN
            -- Re-read under the count lock: a concurrent registration of this token may have won.
            INSERT INTO push_devices (app_id, mode, platform, token, endpoint, p256dh, auth_secret, user_id,
                                      apns_environment, public_key, kid, last_registered_at)
            VALUES (p_app_id, p_mode, p_platform, p_token, p_endpoint, p_p256dh, p_auth_secret, p_user_id,
                    p_apns_environment,
                    CASE WHEN p_key_action = 'set' THEN p_public_key END,
                    CASE WHEN p_key_action = 'set' THEN p_kid END, v_now)
            ON CONFLICT DO NOTHING
            RETURNING * INTO v_dev;
            IF v_dev.id IS NULL THEN
                IF p_token IS NOT NULL THEN
                    SELECT * INTO v_dev FROM push_devices
                     WHERE app_id = p_app_id AND mode = p_mode AND token = p_token FOR UPDATE;
                ELSE
                    SELECT * INTO v_dev FROM push_devices
                     WHERE app_id = p_app_id AND mode = p_mode AND endpoint = p_endpoint FOR UPDATE;
                END IF;
            ELSE
                v_created := true;
                UPDATE push_device_counts SET active_count = active_count + 1
                 WHERE app_id = p_app_id AND mode = p_mode;
            END IF;
        END IF;
        IF NOT v_created AND NOT v_dev.active THEN
            v_reactivated := true;
            UPDATE push_device_counts SET active_count = active_count + 1
             WHERE app_id = p_app_id AND mode = p_mode;
        END IF;
    END IF;

    IF NOT v_created THEN
        UPDATE push_devices SET
            platform = p_platform, user_id = p_user_id, apns_environment = p_apns_environment,
            p256dh = p_p256dh, auth_secret = p_auth_secret,
            public_key = CASE p_key_action WHEN 'set' THEN p_public_key WHEN 'remove' THEN NULL ELSE public_key END,
            kid = CASE p_key_action WHEN 'set' THEN p_kid WHEN 'remove' THEN NULL ELSE kid END,
            active = true, deactivated_at = NULL, deactivation_reason = NULL, last_registered_at = v_now
         WHERE id = v_dev.id;
    END IF;

    -- R-DEV-5: keep the 20 most recently registered active devices of this user.
    WITH extra AS (
        SELECT d.id FROM push_devices d
         WHERE d.app_id = p_app_id AND d.mode = p_mode AND d.user_id = p_user_id AND d.active
         ORDER BY d.last_registered_at DESC, d.id DESC
        OFFSET coalesce(p_user_limit, 20)
    ), off AS (
        UPDATE push_devices d SET active = false, deactivated_at = v_now, deactivation_reason = 'DEVICE_LIMIT'
          FROM extra WHERE d.id = extra.id
        RETURNING d.id, d.user_id
    ), ev AS (
        INSERT INTO push_events (app_id, type, payload)
        SELECT p_app_id, 'push_device.deactivated',
               jsonb_build_object('device_id', off.id, 'user_id', off.user_id, 'mode', p_mode, 'reason', 'DEVICE_LIMIT')
          FROM off
        RETURNING (payload ->> 'device_id')::uuid AS id
    )
    SELECT array_agg(id) INTO v_evicted FROM ev;
    IF v_evicted IS NOT NULL THEN
        UPDATE push_device_counts SET active_count = greatest(active_count - cardinality(v_evicted), 0)
         WHERE app_id = p_app_id AND mode = p_mode;
    END IF;

    device_id := v_dev.id;
    created := v_created;
    reactivated := v_reactivated;
    evicted := coalesce(v_evicted, '{}');
    RETURN NEXT;
END
$$;

-- push_delete_device: deletion deactivates (R-DEV-7); registering the token again reactivates it.
CREATE FUNCTION push_delete_device(p_app_id uuid, p_mode text, p_device_id uuid) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE push_devices SET active = false, deactivated_at = clock_timestamp(), deactivation_reason = 'DELETED'
     WHERE id = p_device_id AND app_id = p_app_id AND mode = p_mode AND active;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    UPDATE push_device_counts SET active_count = greatest(active_count - 1, 0)
     WHERE app_id = p_app_id AND mode = p_mode;
    RETURN true;
END
$$;
