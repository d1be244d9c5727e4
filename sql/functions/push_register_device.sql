-- push_register_device: the upsert on (app, mode, token) or (app, mode, endpoint) (R-DEV-2).
-- p_key_action: 'keep' (field absent: keep the stored key, R-DEV-4), 'set' (p_public_key, p_kid),
-- 'remove' (explicit null; fires no webhook). A new device, or a reactivated one (R-DEV-7), counts
-- against the app's limit (R-DEV-6: PUSH_DEVICE_LIMIT), judged on the count before this
-- registration so it comes before the user's limit (R-DEV-5: the least recently registered other
-- devices are deactivated with DEVICE_LIMIT events; a refusal rolls those back with everything
-- else). The registered device itself is never the one evicted. p_app_limit NULL: 1,000,000 live,
-- 1,000 test; p_user_limit NULL: 20. Errors: 'VALIDATION_ERROR: ...', 'NOT_FOUND: ...',
-- 'PUSH_DEVICE_LIMIT: ...' (SQLSTATE P0001).
-- R-DEV-8: last_registered_at is set after the device row is locked and never moves backwards.
CREATE FUNCTION push_register_device(
    p_app_id uuid, p_mode text, p_platform text, p_token text, p_endpoint text, p_p256dh bytea,
    p_auth_secret bytea, p_user_id text, p_apns_environment text, p_key_action text,
    p_public_key bytea, p_kid text, p_app_limit bigint DEFAULT NULL, p_user_limit int DEFAULT 20)
RETURNS TABLE (device_id uuid, created boolean, reactivated boolean, evicted uuid[])
LANGUAGE plpgsql AS $$
DECLARE
    v_dev push_devices;
    v_app_limit bigint := coalesce(p_app_limit, CASE WHEN p_mode = 'live' THEN 1000000 ELSE 1000 END);
    v_user_limit int := coalesce(p_user_limit, 20);
    v_created boolean := false;
    v_reactivated boolean := false;
    v_evicted uuid[];
    v_delta bigint;
    v_counted boolean := false;
    v_count bigint;
BEGIN
    IF p_key_action IS NULL OR p_key_action NOT IN ('keep', 'set', 'remove') THEN
        RAISE EXCEPTION 'VALIDATION_ERROR: key action must be keep, set or remove';
    END IF;
    IF p_mode IS NULL OR p_mode NOT IN ('test', 'live') THEN
        RAISE EXCEPTION 'VALIDATION_ERROR: mode must be test or live';
    END IF;
    IF (p_token IS NULL) = (p_endpoint IS NULL) THEN
        RAISE EXCEPTION 'VALIDATION_ERROR: a device has a token or a subscription endpoint, not both';
    END IF;
    IF v_user_limit < 1 THEN
        RAISE EXCEPTION 'VALIDATION_ERROR: the per-user device limit must be at least 1';
    END IF;
    PERFORM 1 FROM push_apps WHERE id = p_app_id AND deleted_at IS NULL;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'NOT_FOUND: push app % does not exist', p_app_id;
    END IF;
    -- One user's registrations in turn (R-DEV-5): every device joining a user's active set does so
    -- under this lock, so the eviction below sees all of them.
    PERFORM pg_advisory_xact_lock(hashtextextended(p_app_id::text || '/' || p_mode || '/' || p_user_id, 0));

    -- The device row, locked: the existing one, or a new one. Two registrations of one new token
    -- race on the unique index; the loser's INSERT does nothing and its next SELECT finds the
    -- winner's row. Bounded: a conflicting row that vanished again (cleanup) costs one more turn.
    FOR attempt IN 1..3 LOOP
        IF p_token IS NOT NULL THEN
            SELECT * INTO v_dev FROM push_devices
             WHERE app_id = p_app_id AND mode = p_mode AND token = p_token FOR UPDATE;
        ELSE
            SELECT * INTO v_dev FROM push_devices
             WHERE app_id = p_app_id AND mode = p_mode AND endpoint = p_endpoint FOR UPDATE;
        END IF;
        EXIT WHEN FOUND;
        INSERT INTO push_devices (app_id, mode, platform, token, endpoint, p256dh, auth_secret, user_id,
                                  apns_environment, public_key, kid, last_registered_at)
        VALUES (p_app_id, p_mode, p_platform, p_token, p_endpoint, p_p256dh, p_auth_secret, p_user_id,
                p_apns_environment,
                CASE WHEN p_key_action = 'set' THEN p_public_key END,
                CASE WHEN p_key_action = 'set' THEN p_kid END, clock_timestamp())
        ON CONFLICT DO NOTHING
        RETURNING * INTO v_dev;
        IF FOUND THEN
            v_created := true;
            EXIT;
        END IF;
    END LOOP;
    IF v_dev.id IS NULL THEN
        RAISE EXCEPTION 'could not register device: its row kept changing concurrently'
            USING ERRCODE = '40001';
    END IF;

    IF NOT v_created THEN
        v_reactivated := NOT v_dev.active;
        UPDATE push_devices SET
            platform = p_platform, user_id = p_user_id, apns_environment = p_apns_environment,
            p256dh = p_p256dh, auth_secret = p_auth_secret,
            public_key = CASE p_key_action WHEN 'set' THEN p_public_key WHEN 'remove' THEN NULL ELSE public_key END,
            kid = CASE p_key_action WHEN 'set' THEN p_kid WHEN 'remove' THEN NULL ELSE kid END,
            active = true, deactivated_at = NULL, deactivation_reason = NULL,
            last_registered_at = greatest(last_registered_at, clock_timestamp())
         WHERE id = v_dev.id;
    END IF;

    -- R-DEV-5: besides this device, keep the user's (limit - 1) most recently registered active
    -- devices. The UPDATE re-checks each row, so one deactivated or moved away meanwhile is skipped.
    WITH extra AS (
        SELECT d.id FROM push_devices d
         WHERE d.app_id = p_app_id AND d.mode = p_mode AND d.user_id = p_user_id AND d.active
           AND d.id <> v_dev.id
         ORDER BY d.last_registered_at DESC, d.id DESC
        OFFSET v_user_limit - 1
    ), off AS (
        UPDATE push_devices d SET active = false, deactivated_at = clock_timestamp(), deactivation_reason = 'DEVICE_LIMIT'
          FROM extra
         WHERE d.id = extra.id AND d.active AND d.app_id = p_app_id AND d.mode = p_mode AND d.user_id = p_user_id
        RETURNING d.id, d.user_id
    ), ev AS (
        INSERT INTO push_events (app_id, type, payload)
        SELECT p_app_id, 'push_device.deactivated',
               jsonb_build_object('device_id', off.id, 'user_id', off.user_id, 'mode', p_mode, 'reason', 'DEVICE_LIMIT')
          FROM off
        RETURNING (payload ->> 'device_id')::uuid AS id
    )
    SELECT array_agg(id) INTO v_evicted FROM ev;

    -- The app's active count (R-DEV-6), kept in push_device_counts so nothing scans devices.
    v_delta := CASE WHEN v_created OR v_reactivated THEN 1 ELSE 0 END - coalesce(cardinality(v_evicted), 0);
    IF v_created OR v_reactivated THEN
        -- The limit is judged on the count before this registration; the row lock taken here makes
        -- parallel registrations at the limit take their turns.
        FOR attempt IN 1..2 LOOP
            UPDATE push_device_counts c SET active_count = greatest(c.active_count + v_delta, 0)
             WHERE c.app_id = p_app_id AND c.mode = p_mode AND c.active_count < v_app_limit;
            IF FOUND THEN
                v_counted := true;
                EXIT;
            END IF;
            PERFORM 1 FROM push_device_counts c WHERE c.app_id = p_app_id AND c.mode = p_mode;
            EXIT WHEN FOUND OR v_app_limit < 1;
            -- The app's first device in this mode: no count row yet.
            INSERT INTO push_device_counts (app_id, mode, active_count)
            VALUES (p_app_id, p_mode, greatest(v_delta, 0))
            ON CONFLICT DO NOTHING;
            IF FOUND THEN
                v_counted := true;
                EXIT;
            END IF;
        END LOOP;
        IF NOT v_counted THEN
            SELECT c.active_count INTO v_count FROM push_device_counts c WHERE c.app_id = p_app_id AND c.mode = p_mode;
            RAISE EXCEPTION 'PUSH_DEVICE_LIMIT: the app has % active % devices, its limit is %',
                coalesce(v_count, 0), p_mode, v_app_limit;
        END IF;
    ELSIF v_delta <> 0 THEN
        UPDATE push_device_counts c SET active_count = greatest(c.active_count + v_delta, 0)
         WHERE c.app_id = p_app_id AND c.mode = p_mode;
    END IF;

    device_id := v_dev.id;
    created := v_created;
    reactivated := v_reactivated;
    evicted := coalesce(v_evicted, '{}');
    RETURN NEXT;
END
$$;
