-- 0024_provider_platforms (issue 16): the platforms a deployment serves, and the two properties of
-- each that SQL needs, in one table that the product's processes fill from their provider table
-- (`ProviderTable` in Sources/PushProviders/Table), so that adding a provider changes no SQL:
-- push_register_device_v2 reads a platform's addressing from it (token, token with an APNs
-- environment, Web Push subscription) instead of naming ios, android and web; push_enqueue bounds
-- a whole-app audience's `platforms` by it; and the acceptance charges' policy, which push_enqueue
-- and push_split_audience each wrote out ('web' as the platform that encrypts itself), is one
-- function, push_policy_delivers, reading `encrypts_itself` from it.
--
-- Who writes it: the API's readiness probe, the worker's readiness gate and the CLI's acceptance
-- commands upsert every descriptor of their table once the schema is ready (PlatformStore.serve,
-- one INSERT ... ON CONFLICT statement, rows in platform order); a row is never deleted by them
-- (a platform a previous release still serves stays served; removing one is a contract step).
-- Expand-then-contract: the table is seeded with today's three platforms exactly as the functions
-- bounded them, so the previous release's API and worker (which never write it) keep today's
-- behaviour; every function keeps its name, signature, answers and messages but the platform
-- refusals, which now list the served platforms (`platform: must be android, ios, web`, as the
-- Swift validation words it).
-- Generated in part by scripts/sql-functions restate from sql/functions/; the functions' current
-- text is there, their history in git.

CREATE TABLE push_platforms (
    -- `push_devices.platform` of the devices it serves (PushCore `Platform`).
    platform text PRIMARY KEY CHECK (platform ~ '^[a-z][a-z0-9_]{0,31}$'),
    -- How its devices register (PushCore `DeviceAddressing`): a token, a token with the APNs
    -- environment it was issued for, or a Web Push subscription (endpoint, p256dh, auth).
    addressing text NOT NULL CHECK (addressing IN ('token', 'token_with_environment', 'subscription')),
    -- Its transport encrypts every push itself (the payload writer's `encryptsItself`, R-SEND-11):
    -- a device without a key of its own is still delivered to, and charged, when encryption is required.
    encrypts_itself boolean NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

INSERT INTO push_platforms (platform, addressing, encrypts_itself) VALUES
    ('android', 'token', false),
    ('ios', 'token_with_environment', false),
    ('web', 'subscription', true);

-- push_policy_delivers(boolean,boolean,boolean,text): the text of sql/functions/push_policy_delivers.sql.
CREATE FUNCTION push_policy_delivers(p_keyed boolean, p_encrypts_itself boolean, p_encrypted boolean,
                                     p_content_mode text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT p_keyed OR p_encrypts_itself OR NOT coalesce(p_encrypted, false) OR p_content_mode = 'ids_only'
$$;

-- push_register_device_v2(uuid,text,text,text,text,bytea,bytea,text,text,text,bytea,text,bigint,int): the text of sql/functions/push_register_device_v2.sql.
CREATE OR REPLACE FUNCTION push_register_device_v2(
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

-- push_enqueue(uuid,text,text[],uuid[],text,text,text,int,text,text,text,text,timestamptz,int,text,text,text,timestamptz,text,text,float8,text,text,text,float8,text,text[],text,text[],text,text,text[]): the text of sql/functions/push_enqueue.sql.
CREATE OR REPLACE FUNCTION push_enqueue(
    p_app_id uuid, p_mode text, p_user_ids text[], p_device_ids uuid[],
    p_title text, p_body text, p_data text, p_badge int, p_sound text, p_thread_id text,
    p_collapse_key text, p_priority text, p_send_at timestamptz, p_ttl int,
    p_idempotency_key text, p_sms_phone text, p_sms_text text,
    p_now timestamptz DEFAULT now(),
    p_push_type text DEFAULT NULL, p_interruption_level text DEFAULT NULL, p_relevance_score float8 DEFAULT NULL,
    p_category text DEFAULT NULL, p_target_content_id text DEFAULT NULL, p_critical_sound_name text DEFAULT NULL,
    p_critical_sound_volume float8 DEFAULT NULL, p_title_loc_key text DEFAULT NULL, p_title_loc_args text[] DEFAULT NULL,
    p_body_loc_key text DEFAULT NULL, p_body_loc_args text[] DEFAULT NULL, p_channel_id text DEFAULT NULL,
    p_audience text DEFAULT NULL, p_audience_platforms text[] DEFAULT NULL)
RETURNS TABLE (notification_id uuid, created boolean)
-- Generic plans (sql/0021, issue 17): the charges' INSERT ... SELECT was planned again at every call,
-- its generic plan (costed for an audience of unknown size) never cheaper than a custom one for one user.
SET plan_cache_mode = force_generic_plan
LANGUAGE plpgsql AS $$
DECLARE
    v_app push_apps;
    v_id uuid;
    v_ttl int := coalesce(p_ttl, 2419200);
    v_priority text := coalesce(p_priority, 'high');
    v_data json;
    v_floor bigint;
    v_bad bigint;
    v_prev push_notifications;
    v_differs text;
    v_push_type text := coalesce(p_push_type, 'alert');
    v_title_loc_args text[] := CASE WHEN cardinality(p_title_loc_args) = 0 THEN NULL ELSE p_title_loc_args END;
    v_body_loc_args text[] := CASE WHEN cardinality(p_body_loc_args) = 0 THEN NULL ELSE p_body_loc_args END;
    v_user_ids text[] := p_user_ids;
    v_platforms text[] := ARRAY(SELECT x FROM unnest(p_audience_platforms) p(x) ORDER BY x);
BEGIN
    IF p_mode IS NULL OR p_mode NOT IN ('test', 'live') THEN
        PERFORM push_refuse('mode', 'must be test or live');
    END IF;
    SELECT * INTO v_app FROM push_apps WHERE id = p_app_id AND deleted_at IS NULL;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'NOT_FOUND: push app % does not exist', p_app_id USING COLUMN = 'app_id';
    END IF;
    IF p_now IS NULL OR NOT isfinite(p_now) THEN
        PERFORM push_refuse('now', 'must be a finite time');
    END IF;

    IF p_audience IS NOT NULL THEN
        IF p_audience <> 'all' THEN
            PERFORM push_refuse('audience', 'must be all (every active device of the app in its mode) or absent');
        END IF;
        IF cardinality(p_user_ids) > 0 OR p_device_ids IS NOT NULL THEN
            PERFORM push_refuse('audience', 'a whole-app audience takes no user_ids and no device_ids');
        END IF;
        -- The platforms served: push_platforms (sql/0024, the provider table's), never a list here.
        IF p_audience_platforms IS NOT NULL AND (cardinality(p_audience_platforms) = 0
           OR array_ndims(p_audience_platforms) <> 1
           OR EXISTS (SELECT 1 FROM unnest(p_audience_platforms) p(x)
                       WHERE x IS NULL OR NOT EXISTS (SELECT 1 FROM push_platforms s WHERE s.platform = x))
           OR (SELECT count(DISTINCT x) FROM unnest(p_audience_platforms) p(x)) <> cardinality(p_audience_platforms)) THEN
            PERFORM push_refuse('platforms', (SELECT format('when given, 1 to %s distinct platforms among %s', count(*),
                                                            string_agg(s.platform, ', ' ORDER BY s.platform))
                                                FROM push_platforms s));
        END IF;
        v_user_ids := '{}';
    ELSIF p_audience_platforms IS NOT NULL THEN
        PERFORM push_refuse('platforms', 'only a whole-app audience (audience all) is narrowed by platform');
    ELSIF p_user_ids IS NULL OR cardinality(p_user_ids) = 0 THEN
        PERFORM push_refuse('user_ids', 'at least one user is required');
    END IF;
    IF p_audience IS NULL AND (array_ndims(p_user_ids) <> 1 OR cardinality(p_user_ids) > 1000) THEN
        PERFORM push_refuse('user_ids', 'at most 1000 user ids, in a one-dimensional array');
    END IF;
    SELECT min(u.i) - 1 INTO v_bad FROM unnest(p_user_ids) WITH ORDINALITY AS u(id, i)
     WHERE u.id IS NULL OR char_length(u.id) NOT BETWEEN 1 AND 255;
    IF v_bad IS NOT NULL THEN
        PERFORM push_refuse('user_ids', format('element %s (from 0) is not a user id of 1 to 255 characters', v_bad));
    END IF;
    IF p_device_ids IS NOT NULL THEN
        IF cardinality(p_device_ids) = 0 OR array_ndims(p_device_ids) <> 1 OR cardinality(p_device_ids) > 1000 THEN
            PERFORM push_refuse('device_ids', 'when given, 1 to 1000 device ids in a one-dimensional array');
        END IF;
        IF array_position(p_device_ids, NULL) IS NOT NULL THEN
            PERFORM push_refuse('device_ids', 'no element may be null');
        END IF;
    END IF;

    IF p_data IS NOT NULL AND octet_length(p_data) > 65536 THEN
        PERFORM push_refuse('data', 'at most 65536 bytes of JSON text');
    END IF;
    BEGIN
        v_data := p_data::json;
        IF v_data IS NOT NULL AND json_typeof(v_data) = 'object' THEN
            v_floor := push_content_floor(p_title, p_body, v_data);
        ELSE
            v_floor := push_content_floor(p_title, p_body, NULL);
        END IF;
    EXCEPTION WHEN data_exception OR program_limit_exceeded THEN
        -- Never the server's own message: its context quotes the text.
        PERFORM push_refuse('data', 'must be a JSON object (valid JSON, without \u0000)');
    END;
    IF v_data IS NOT NULL AND json_typeof(v_data) <> 'object' THEN
        PERFORM push_refuse('data', 'must be a JSON object');
    END IF;
    v_floor := v_floor + push_loc_text_bytes(p_title_loc_key, v_title_loc_args, p_body_loc_key, v_body_loc_args);
    IF v_floor > 4096 AND v_app.content_mode = 'sealed' THEN
        RAISE EXCEPTION 'PUSH_PAYLOAD_TOO_LARGE: content is at least % bytes in every payload kind and can never fit in 4096; cut at least % bytes',
            v_floor, v_floor - 4096;
    END IF;

    IF p_badge IS NOT NULL AND p_badge < 0 THEN
        PERFORM push_refuse('badge', 'must be from 0 to 2147483647');
    END IF;
    PERFORM push_check_kind_fields(v_push_type, p_title, p_body, p_badge, p_sound, p_thread_id, p_interruption_level,
        p_relevance_score, p_category, p_target_content_id, p_critical_sound_name, p_critical_sound_volume,
        p_title_loc_key, v_title_loc_args, p_body_loc_key, v_body_loc_args, p_channel_id);
    IF p_collapse_key IS NOT NULL
       AND (octet_length(p_collapse_key) NOT BETWEEN 1 AND 64 OR p_collapse_key ~ '[\u0001-\u001f\u007f]') THEN
        PERFORM push_refuse('collapse_key', 'must be 1 to 64 bytes (R-SEND-13) without control characters');
    END IF;
    IF v_priority NOT IN ('high', 'normal') THEN
        PERFORM push_refuse('priority', 'must be high or normal');
    END IF;
    IF v_ttl < 0 OR v_ttl > 2419200 THEN
        PERFORM push_refuse('ttl', 'must be from 0 to 2419200 seconds');
    END IF;
    IF p_send_at IS NOT NULL AND (NOT isfinite(p_send_at) OR p_send_at > p_now + interval '365 days'
                                  OR p_send_at < p_now - interval '30 days') THEN
        PERFORM push_refuse('send_at', 'must be a finite time from 30 days before to 365 days after acceptance');
    END IF;
    IF p_idempotency_key IS NOT NULL AND char_length(p_idempotency_key) NOT BETWEEN 1 AND 255 THEN
        PERFORM push_refuse('idempotency_key', 'must be 1 to 255 characters');
    END IF;
    IF (p_sms_phone IS NULL) <> (p_sms_text IS NULL) THEN
        PERFORM push_refuse(CASE WHEN p_sms_phone IS NULL THEN 'sms_fallback.phone' ELSE 'sms_fallback.text' END,
                            'an SMS fallback needs both a phone number and a text');
    END IF;
    IF p_sms_phone IS NOT NULL AND p_sms_phone !~ '^\+[1-9][0-9]{7,14}$' THEN
        PERFORM push_refuse('sms_fallback.phone', 'must be an E.164 number: + and 8 to 15 digits, the first not 0');
    END IF;
    IF p_sms_text IS NOT NULL AND char_length(p_sms_text) NOT BETWEEN 1 AND 1600 THEN
        PERFORM push_refuse('sms_fallback.text', 'must be 1 to 1600 characters');
    END IF;

    INSERT INTO push_notifications AS n (app_id, mode, user_ids, device_ids, title, body, data, badge, sound,
        thread_id, collapse_key, priority, ttl_seconds, send_at, accepted_at, expires_at, idempotency_key,
        sms_phone, sms_text, push_type, interruption_level, relevance_score, category, target_content_id,
        critical_sound_name, critical_sound_volume, title_loc_key, title_loc_args, body_loc_key, body_loc_args,
        channel_id, audience, audience_platforms)
    VALUES (p_app_id, p_mode, v_user_ids, p_device_ids, p_title, p_body, p_data, p_badge, p_sound,
        p_thread_id, p_collapse_key, v_priority, v_ttl, p_send_at, p_now,
        push_expires_at(p_now, p_send_at, v_ttl), p_idempotency_key, p_sms_phone, p_sms_text, v_push_type,
        p_interruption_level, p_relevance_score, p_category, p_target_content_id, p_critical_sound_name,
        p_critical_sound_volume, p_title_loc_key, v_title_loc_args, p_body_loc_key, v_body_loc_args, p_channel_id,
        p_audience, CASE WHEN p_audience_platforms IS NOT NULL THEN v_platforms END)
    ON CONFLICT (app_id, mode, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
    RETURNING n.id INTO v_id;

    IF v_id IS NULL THEN
        -- R-API-5: a replay answers the first notification; other content is refused.
        SELECT * INTO v_prev FROM push_notifications n
         WHERE n.app_id = p_app_id AND n.mode = p_mode AND n.idempotency_key = p_idempotency_key;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'the notification of this idempotency key changed concurrently' USING ERRCODE = '40001';
        END IF;
        v_differs := CASE
            WHEN v_prev.audience IS DISTINCT FROM p_audience THEN 'audience'
            WHEN v_prev.audience_platforms IS DISTINCT FROM CASE WHEN p_audience_platforms IS NOT NULL THEN v_platforms END
                THEN 'platforms'
            WHEN ARRAY(SELECT DISTINCT u FROM unnest(v_prev.user_ids) u ORDER BY 1)
                 IS DISTINCT FROM ARRAY(SELECT DISTINCT u FROM unnest(v_user_ids) u ORDER BY 1) THEN 'user_ids'
            WHEN (v_prev.device_ids IS NULL) <> (p_device_ids IS NULL)
                 OR ARRAY(SELECT DISTINCT d FROM unnest(v_prev.device_ids) d ORDER BY 1)
                    IS DISTINCT FROM ARRAY(SELECT DISTINCT d FROM unnest(p_device_ids) d ORDER BY 1) THEN 'device_ids'
            WHEN v_prev.content_erased_at IS NULL AND v_prev.title IS DISTINCT FROM p_title THEN 'title'
            WHEN v_prev.content_erased_at IS NULL AND v_prev.body IS DISTINCT FROM p_body THEN 'body'
            WHEN v_prev.content_erased_at IS NULL AND v_prev.data IS DISTINCT FROM p_data THEN 'data'
            WHEN v_prev.badge IS DISTINCT FROM p_badge THEN 'badge'
            WHEN v_prev.content_erased_at IS NULL AND v_prev.sound IS DISTINCT FROM p_sound THEN 'sound'
            WHEN v_prev.content_erased_at IS NULL AND v_prev.thread_id IS DISTINCT FROM p_thread_id THEN 'thread_id'
            WHEN v_prev.collapse_key IS DISTINCT FROM p_collapse_key THEN 'collapse_key'
            WHEN v_prev.priority IS DISTINCT FROM v_priority THEN 'priority'
            WHEN v_prev.ttl_seconds IS DISTINCT FROM v_ttl THEN 'ttl'
            WHEN v_prev.content_erased_at IS NULL AND v_prev.sms_phone IS DISTINCT FROM p_sms_phone THEN 'sms_fallback.phone'
            WHEN v_prev.content_erased_at IS NULL AND v_prev.sms_text IS DISTINCT FROM p_sms_text THEN 'sms_fallback.text'
            WHEN v_prev.push_type IS DISTINCT FROM v_push_type THEN 'push_type'
            WHEN v_prev.interruption_level IS DISTINCT FROM p_interruption_level THEN 'interruption_level'
            WHEN v_prev.relevance_score IS DISTINCT FROM p_relevance_score THEN 'relevance_score'
            WHEN v_prev.content_erased_at IS NULL AND v_prev.category IS DISTINCT FROM p_category THEN 'category'
            WHEN v_prev.content_erased_at IS NULL AND v_prev.target_content_id IS DISTINCT FROM p_target_content_id
                THEN 'target_content_id'
            WHEN v_prev.content_erased_at IS NULL AND v_prev.critical_sound_name IS DISTINCT FROM p_critical_sound_name
                THEN 'critical_sound.name'
            WHEN v_prev.critical_sound_volume IS DISTINCT FROM p_critical_sound_volume THEN 'critical_sound.volume'
            WHEN v_prev.content_erased_at IS NULL AND v_prev.title_loc_key IS DISTINCT FROM p_title_loc_key THEN 'title_loc_key'
            WHEN v_prev.content_erased_at IS NULL AND v_prev.title_loc_args IS DISTINCT FROM v_title_loc_args THEN 'title_loc_args'
            WHEN v_prev.content_erased_at IS NULL AND v_prev.body_loc_key IS DISTINCT FROM p_body_loc_key THEN 'body_loc_key'
            WHEN v_prev.content_erased_at IS NULL AND v_prev.body_loc_args IS DISTINCT FROM v_body_loc_args THEN 'body_loc_args'
            WHEN v_prev.content_erased_at IS NULL AND v_prev.channel_id IS DISTINCT FROM p_channel_id THEN 'channel_id'
        END;
        IF v_differs IS NOT NULL THEN
            RAISE EXCEPTION 'IDEMPOTENCY_KEY_REUSED: the idempotency key was used for notification % with another %',
                v_prev.id, v_differs USING COLUMN = 'idempotency_key';
        END IF;
        RETURN QUERY SELECT v_prev.id, false;
        RETURN;
    END IF;

    -- Acceptance charges (R-SEND-9, R-IDS-1): what the policy would deliver to now
    -- (push_devices_audience_idx); PushCore's DeliveryPlanner.policyDelivers at send time. The
    -- predicate is push_policy_delivers (sql/0024), inlined; the platforms that encrypt themselves
    -- are read once per call (an InitPlan over push_platforms).
    -- A whole-app audience is charged at send time instead, batch by batch (push_split_audience, R-KIND-5).
    INSERT INTO push_ledger (notification_id, device_id, kind, app_id, mode, reason)
    SELECT v_id, d.id, 'charge', p_app_id, p_mode, 'accepted'
      FROM push_devices d
     WHERE p_audience IS NULL AND d.app_id = p_app_id AND d.mode = p_mode AND d.active AND d.user_id = ANY (p_user_ids)
       AND (p_device_ids IS NULL OR d.id = ANY (p_device_ids))
       AND push_policy_delivers(d.public_key IS NOT NULL,
                                d.platform = ANY (ARRAY(SELECT s.platform FROM push_platforms s WHERE s.encrypts_itself)),
                                v_app.require_encryption, v_app.content_mode);

    INSERT INTO push_jobs (kind, notification_id, app_id, run_at)
    VALUES ('notification', v_id, p_app_id, greatest(p_now, coalesce(p_send_at, p_now)));

    PERFORM pg_notify('pushfleet_jobs', '');
    RETURN QUERY SELECT v_id, true;
END
$$;

-- push_split_audience(bigint,uuid,int,int,int,float8,timestamptz): the text of sql/functions/push_split_audience.sql.
CREATE OR REPLACE FUNCTION push_split_audience(p_job_id bigint, p_lease_token uuid, p_chunk int, p_batch_size int,
                                    p_max_pending int, p_wait_seconds float8, p_now timestamptz DEFAULT now())
RETURNS TABLE (outcome text, batch_jobs int, devices int, charged int)
LANGUAGE plpgsql AS $$
DECLARE
    v_n push_notifications;
    v_job push_jobs;
    v_deleted boolean;
    v_ids uuid[];
    v_charge uuid[];
    v_count int;
    v_groups int;
    v_inserted int;
    v_charged int;
    v_done boolean;
BEGIN
    IF p_chunk IS NULL OR p_chunk NOT BETWEEN 1 AND 10000 OR p_batch_size IS NULL OR p_batch_size < 1
       OR p_max_pending IS NULL OR p_max_pending < 1 OR p_wait_seconds IS NULL OR p_wait_seconds < 0 THEN
        RAISE EXCEPTION 'VALIDATION_ERROR: p_chunk 1 to 10000, p_batch_size and p_max_pending at least 1, p_wait_seconds at least 0';
    END IF;
    SELECT n.* INTO v_n FROM push_notifications n
     WHERE n.id = (SELECT j.notification_id FROM push_jobs j WHERE j.id = p_job_id) FOR UPDATE;
    SELECT j.* INTO v_job FROM push_jobs j
     WHERE j.id = p_job_id AND j.lease_token = p_lease_token AND j.state = 'running' AND j.kind = 'split' FOR UPDATE;
    IF NOT FOUND THEN
        RETURN QUERY SELECT 'lease_lost'::text, 0, 0, 0;
        RETURN;
    END IF;
    IF v_n.id IS NULL THEN
        RETURN QUERY SELECT 'orphaned'::text, 0, 0, 0;
        RETURN;
    END IF;
    IF v_n.status <> 'sending' OR v_n.audience IS DISTINCT FROM 'all' THEN
        UPDATE push_jobs SET state = 'completed', finalized_at = p_now, lease_token = NULL, lease_expires_at = NULL,
                             lease_owner = NULL
         WHERE id = p_job_id;
        RETURN QUERY SELECT 'not_sending'::text, 0, 0, 0;
        RETURN;
    END IF;
    IF v_n.remaining_batches - 1 >= p_max_pending THEN
        UPDATE push_jobs SET state = 'available', run_at = p_now + make_interval(secs => p_wait_seconds), attempt = 0,
                             lease_token = NULL, lease_expires_at = NULL, lease_owner = NULL
         WHERE id = p_job_id;
        RETURN QUERY SELECT 'throttled'::text, 0, 0, 0;
        RETURN;
    END IF;
    SELECT a.deleted_at IS NOT NULL INTO v_deleted FROM push_apps a WHERE a.id = v_n.app_id;

    -- The chunk (push_devices_broadcast_idx, keyset after the cursor): at most p_chunk ids.
    SELECT coalesce(array_agg(c.id ORDER BY c.id), '{}'),
           coalesce(array_agg(c.id ORDER BY c.id) FILTER (WHERE push_policy_delivers(
               c.keyed, c.platform = ANY (ARRAY(SELECT s.platform FROM push_platforms s WHERE s.encrypts_itself)),
               v_n.encrypted, v_n.content_mode)), '{}')
      INTO v_ids, v_charge
      FROM (SELECT d.id, d.platform, d.kid IS NOT NULL AS keyed
              FROM push_devices d
             WHERE NOT coalesce(v_deleted, true) AND d.app_id = v_n.app_id AND d.mode = v_n.mode AND d.active
               AND (v_n.split_cursor IS NULL OR d.id > v_n.split_cursor)
               AND d.created_at <= v_n.started_at
               AND (v_n.audience_platforms IS NULL OR d.platform = ANY (v_n.audience_platforms))
             ORDER BY d.id
             LIMIT p_chunk) c;
    v_count := cardinality(v_ids);
    v_done := v_count < p_chunk;
    v_groups := (v_count + p_batch_size - 1) / p_batch_size;

    -- The chunk's batch jobs, but the last group of the last chunk, which the split job becomes.
    INSERT INTO push_jobs (kind, notification_id, app_id, device_ids, priority, run_at)
    SELECT 'batch', v_n.id, v_n.app_id, v_ids[g * p_batch_size + 1 : (g + 1) * p_batch_size], v_job.priority, p_now
      FROM generate_series(0, v_groups - 1 - CASE WHEN v_done THEN 1 ELSE 0 END) AS g;
    GET DIAGNOSTICS v_inserted = ROW_COUNT;

    -- Charges at send time (R-KIND-5), one per delivery at most (the ledger's primary key).
    INSERT INTO push_ledger (notification_id, device_id, kind, app_id, mode, reason)
    SELECT v_n.id, c.id, 'charge', v_n.app_id, v_n.mode, 'send_time'
      FROM unnest(v_charge) AS c(id)
    ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS v_charged = ROW_COUNT;

    UPDATE push_notifications
       SET split_cursor = CASE WHEN v_count > 0 THEN v_ids[v_count] ELSE split_cursor END,
           remaining_batches = remaining_batches + v_inserted
     WHERE id = v_n.id;
    IF v_done THEN
        UPDATE push_jobs
           SET kind = 'batch',
               device_ids = CASE WHEN v_groups > 0 THEN v_ids[(v_groups - 1) * p_batch_size + 1 : v_count] ELSE '{}' END,
               state = 'available', run_at = p_now, attempt = 0, lease_token = NULL, lease_expires_at = NULL,
               lease_owner = NULL
         WHERE id = p_job_id;
    ELSE
        -- Its run_at kept: the split job stays its app's first job in the claim's order (ahead of
        -- the batches it made), while the claim's round robin gives other apps their turn.
        UPDATE push_jobs SET state = 'available', attempt = 0, lease_token = NULL, lease_expires_at = NULL,
                             lease_owner = NULL
         WHERE id = p_job_id;
    END IF;
    PERFORM pg_notify('pushfleet_jobs', '');
    RETURN QUERY SELECT CASE WHEN v_done THEN 'done' ELSE 'split' END::text,
                        v_inserted + CASE WHEN v_done THEN 1 ELSE 0 END, v_count, v_charged;
END
$$;
