-- push_enqueue (sql/0024, issue 16): names no platform. A whole-app audience's `platforms` are
-- bounded by push_platforms (the deployment's provider table), and the acceptance charges' policy
-- is push_policy_delivers, which push_split_audience shares. Everything else is 0021's text.
-- push_enqueue (sql/0019, after sql/0018): an ids_only app (R-IDS-1) is charged at acceptance for
-- its keyless devices too (nothing of the content leaves, so R-SEND-5 does not refuse them), and its
-- content is bounded by R-LIM-1 alone (its iOS and Android payloads never carry it: the floor below
-- is a sealed app's). sql/0021 (issue 17) plans it generically.
-- push_enqueue (sql/0018, issue 22), restated whole with a whole-app audience: p_audience 'all'
-- addresses every active device of the app in its mode (optionally only those of
-- p_audience_platforms) instead of p_user_ids, which must then be NULL or empty and is stored as
-- '{}'; p_device_ids must be NULL. Such a notification is charged at its send time, batch by
-- batch, by push_split_audience (R-KIND-5: a million charge rows in the caller's transaction are
-- not acceptable), so it writes no acceptance charge here; a replay compares the audience too.
-- Everything else is 0011/0012's text. The two new parameters come last with defaults, so a
-- caller of the previous release (30 arguments) keeps working; the 30-parameter signature is
-- dropped by sql/0018 so that such a call is not ambiguous.
CREATE FUNCTION push_enqueue(
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
