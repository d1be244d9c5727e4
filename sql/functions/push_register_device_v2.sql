-- push_register_device_v2: push_register_device (0003) with every field bounded here and the
-- device as stored in the answer (for the API's 200). Bounds (R-DEV-1, R-DEV-3): platform one of
-- push_platforms (sql/0024: the platforms the deployment's provider table serves, each with its
-- addressing); a token-addressed device's token 1 to 512 characters of A-Z a-z 0-9 _ : . -; a
-- subscription-addressed one (web): an https endpoint of at most 2,048 bytes, p256dh a 65-byte
-- uncompressed point, auth 16 bytes, no token, no encryption key; user_id 1 to 255 characters;
-- apns_environment sandbox or production where the addressing names an APNs environment (iOS)
-- and absent otherwise; a key set is 65 bytes starting 0x04 with a 16-character kid. (PushCore
-- checks more before this call: the key on the curve, the endpoint's host.) The rest is 0003's
-- upsert, limits and lock order (sql/LOCK_ORDER.md). The limits (R-DEV-5, R-DEV-6) are the
-- caller's: PushCore's DeviceLimits, passed by DeviceRegistry (sql/0010 made them required).
-- sql/0016: a token registered again with another platform is refused, TOKEN_PLATFORM_CONFLICT
-- (R-DEV-2, product decision: a token is one provider's).
CREATE FUNCTION push_register_device_v2(
    p_app_id uuid, p_mode text, p_platform text, p_token text, p_endpoint text, p_p256dh bytea,
    p_auth_secret bytea, p_user_id text, p_apns_environment text, p_key_action text,
    p_public_key bytea, p_kid text, p_app_limit bigint DEFAULT NULL, p_user_limit int DEFAULT NULL)
RETURNS TABLE (device_id uuid, created boolean, reactivated boolean, evicted uuid[], app_id uuid, platform text,
               user_id text, apns_environment text, active boolean, kid text, created_at timestamptz,
               last_registered_at timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_dev push_devices;
    v_app_limit bigint := p_app_limit;
    v_user_limit int := p_user_limit;
    v_created boolean := false;
    v_reactivated boolean := false;
    v_evicted uuid[];
    v_delta bigint;
    v_counted boolean := false;
    v_count bigint;
    v_addressing text;
BEGIN
    IF p_mode IS NULL OR p_mode NOT IN ('test', 'live') THEN
        PERFORM push_refuse('mode', 'must be test or live');
    END IF;
    -- The platforms served and how each registers: push_platforms, which the product's processes
    -- fill from their provider table (sql/0024); this function names no platform.
    SELECT p.addressing INTO v_addressing FROM push_platforms p WHERE p.platform = p_platform;
    IF v_addressing IS NULL THEN
        PERFORM push_refuse('platform', 'must be ' || coalesce((SELECT string_agg(p.platform, ', ' ORDER BY p.platform)
                                                                 FROM push_platforms p), 'a platform this deployment serves'));
    END IF;
    IF p_key_action IS NULL OR p_key_action NOT IN ('keep', 'set', 'remove') THEN
        PERFORM push_refuse('encryption_public_key', 'key action must be keep, set or remove');
    END IF;
    IF p_user_id IS NULL OR char_length(p_user_id) NOT BETWEEN 1 AND 255 THEN
        PERFORM push_refuse('user_id', 'must be 1 to 255 characters');
    END IF;
    IF v_addressing = 'subscription' THEN
        IF p_token IS NOT NULL THEN
            PERFORM push_refuse('token', 'web devices register a subscription, not a token');
        END IF;
        IF p_endpoint IS NULL OR octet_length(p_endpoint) > 2048 OR p_endpoint !~ '^https://[^[:space:][:cntrl:]]+$' THEN
            PERFORM push_refuse('subscription.endpoint', 'must be an https URL of at most 2048 bytes');
        END IF;
        IF p_p256dh IS NULL OR octet_length(p_p256dh) <> 65 OR get_byte(p_p256dh, 0) <> 4 THEN
            PERFORM push_refuse('subscription.keys.p256dh', 'must be a 65-byte uncompressed P-256 point');
        END IF;
        IF p_auth_secret IS NULL OR octet_length(p_auth_secret) <> 16 THEN
            PERFORM push_refuse('subscription.keys.auth', 'must be 16 bytes');
        END IF;
        IF p_key_action = 'set' THEN
            PERFORM push_refuse('encryption_public_key', 'web devices take no encryption key (RFC 8291 protects them)');
        END IF;
    ELSE
        IF p_endpoint IS NOT NULL OR p_p256dh IS NOT NULL OR p_auth_secret IS NOT NULL THEN
            PERFORM push_refuse('subscription', 'applies to web devices only');
        END IF;
        IF p_token IS NULL OR char_length(p_token) > 512 OR p_token !~ '^[A-Za-z0-9_:.-]+$' THEN
            PERFORM push_refuse('token', 'must be 1 to 512 characters of A-Z a-z 0-9 _ : . -');
        END IF;
    END IF;
    IF v_addressing = 'token_with_environment'
       AND (p_apns_environment IS NULL OR p_apns_environment NOT IN ('sandbox', 'production')) THEN
        PERFORM push_refuse('apns_environment', 'must be sandbox or production for an iOS device');
    END IF;
    IF v_addressing <> 'token_with_environment' AND p_apns_environment IS NOT NULL THEN
        PERFORM push_refuse('apns_environment', 'applies to iOS devices only');
    END IF;
    IF p_key_action = 'set' AND (p_public_key IS NULL OR octet_length(p_public_key) <> 65
                                 OR get_byte(p_public_key, 0) <> 4 OR p_kid IS NULL OR char_length(p_kid) <> 16) THEN
        PERFORM push_refuse('encryption_public_key', 'must be a 65-byte uncompressed P-256 point, with its 16-character kid');
    END IF;
    -- The limits are PushCore's (DeviceLimits), passed by the registry on every call: this
    -- function holds no number of its own (issue 16).
    IF v_app_limit IS NULL OR v_user_limit IS NULL THEN
        PERFORM push_refuse('app_limit', 'the per-app and per-user device limits are required (PushCore DeviceLimits)');
    END IF;
    IF v_user_limit < 1 THEN
        PERFORM push_refuse('user_limit', 'the per-user device limit must be at least 1');
    END IF;
    PERFORM 1 FROM push_apps a WHERE a.id = p_app_id AND a.deleted_at IS NULL;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'NOT_FOUND: push app % does not exist', p_app_id USING COLUMN = 'app_id';
    END IF;
    -- One user's registrations in turn (R-DEV-5): every device joining a user's active set does so
    -- under this lock, so the eviction below sees all of them.
    PERFORM pg_advisory_xact_lock(hashtextextended(p_app_id::text || '/' || p_mode || '/' || p_user_id, 0));

    -- The device row, locked: the existing one, or a new one. Two registrations of one new token
    -- race on the unique index; the loser's INSERT does nothing and its next SELECT finds the
    -- winner's row. Bounded: a conflicting row that vanished again (cleanup) costs one more turn.
    FOR attempt IN 1..3 LOOP
        IF p_token IS NOT NULL THEN
            SELECT * INTO v_dev FROM push_devices d
             WHERE d.app_id = p_app_id AND d.mode = p_mode AND d.token = p_token FOR UPDATE;
        ELSE
            SELECT * INTO v_dev FROM push_devices d
             WHERE d.app_id = p_app_id AND d.mode = p_mode AND d.endpoint = p_endpoint FOR UPDATE;
        END IF;
        EXIT WHEN FOUND;
        INSERT INTO push_devices AS d (app_id, mode, platform, token, endpoint, p256dh, auth_secret, user_id,
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

    -- R-DEV-2 (product decision): a token is one provider's; registering it again with another
    -- platform is refused, not a silent move of the device to the other provider.
    IF NOT v_created AND v_dev.platform <> p_platform THEN
        RAISE EXCEPTION 'TOKEN_PLATFORM_CONFLICT: this token is registered as a % device; a token belongs to one platform', v_dev.platform
            USING COLUMN = 'platform';
    END IF;
    IF NOT v_created THEN
        v_reactivated := NOT v_dev.active;
        UPDATE push_devices d SET
            platform = p_platform, user_id = p_user_id, apns_environment = p_apns_environment,
            p256dh = p_p256dh, auth_secret = p_auth_secret,
            public_key = CASE p_key_action WHEN 'set' THEN p_public_key WHEN 'remove' THEN NULL ELSE d.public_key END,
            kid = CASE p_key_action WHEN 'set' THEN p_kid WHEN 'remove' THEN NULL ELSE d.kid END,
            active = true, deactivated_at = NULL, deactivation_reason = NULL,
            last_registered_at = greatest(d.last_registered_at, clock_timestamp())
         WHERE d.id = v_dev.id
        RETURNING * INTO v_dev;
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
    SELECT array_agg(ev.id) INTO v_evicted FROM ev;

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
            INSERT INTO push_device_counts AS c (app_id, mode, active_count)
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

    RETURN QUERY SELECT v_dev.id, v_created, v_reactivated, coalesce(v_evicted, '{}'), v_dev.app_id, v_dev.platform,
                        v_dev.user_id, v_dev.apns_environment, v_dev.active, v_dev.kid, v_dev.created_at,
                        v_dev.last_registered_at;
END
$$;
