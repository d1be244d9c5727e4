-- Every kind of push an app sends (issue 21, R-KIND-1..3): background pushes, the iOS presentation
-- fields, localized placeholders and texts, the Android channel. New columns on push_notifications
-- and push_apps; push_enqueue and push_app_update restated whole with them and their bounds
-- (R-LIM-1), push_check_app_fields with the placeholders' tighter bound (push_app_create is left
-- as it is). The bounds are mirrored for earlier answers by PushAcceptance (`AcceptanceLimits`,
-- `KindValidation`) and probed at each boundary by `FieldBoundsTests` (and its `+Kinds` part).
--
-- Expand-then-contract: columns are only added (push_type with its default, the rest nullable);
-- each function keeps its earlier parameters, in their order, and only gains trailing ones with
-- defaults, and its results only gain columns, so a CLI or API of the previous release calling it
-- positionally keeps working. A worker of the previous release ignores the new columns: deploy
-- workers of this release (schema 11) before any caller sends a background push or the new fields,
-- or a previous worker would send such a notification as an alert without them.
--
-- Bounds (sizes in UTF-8 bytes, "as escaped" = as written in the JSON payload, R-ENC-9):
--   push_type            alert (default) or background; a background push carries only data and
--                        the collapse key: title, body, badge, sound, thread_id and each field below
--                        are refused with it (R-KIND-1)
--   interruption_level   passive, active, time-sensitive or critical; critical needs critical_sound
--   relevance_score      0 to 1 with at most 4 decimal places
--   category, target_content_id, critical_sound.name   at most 64 bytes each, as escaped; with sound
--                        and thread_id, these four in clear beside an encrypted iOS payload take at
--                        most 128 bytes together (sound and critical_sound.name exclude each other)
--   critical_sound.volume  0 to 1 with at most 4 decimal places; only with critical_sound.name
--   title_loc_key, body_loc_key   1 to 256 bytes; title_loc_args, body_loc_args at most 16 strings
--                        of at most 1,024 bytes each (an empty array is no array), only with their
--                        key; all four count in the content floor (they are content, R-KIND-3)
--   channel_id           1 to 128 bytes
--   placeholder_title, placeholder_body, placeholder_title_loc_key, placeholder_body_loc_key
--                        at most 96 bytes each, as escaped (was 128 for the two texts, sql/0006)
-- With these, everything in clear beside an encrypted iOS payload (the placeholder or its loc keys,
-- badge, sound or the critical sound, thread id, the presentation fields) leaves at least 2,523
-- bytes for sealed content (R-LIM-1: at least 2,500; `AcceptanceLimitsTests` computes it with
-- PushCore's size rule).

ALTER TABLE push_notifications
    ADD COLUMN push_type             text NOT NULL DEFAULT 'alert', -- R-KIND-1
    ADD COLUMN interruption_level    text,                          -- R-KIND-2 (iOS only)
    ADD COLUMN relevance_score       float8,
    ADD COLUMN category              text,
    ADD COLUMN target_content_id     text,
    ADD COLUMN critical_sound_name   text,
    ADD COLUMN critical_sound_volume float8,
    ADD COLUMN title_loc_key         text,                          -- R-KIND-3: content
    ADD COLUMN title_loc_args        text[],
    ADD COLUMN body_loc_key          text,
    ADD COLUMN body_loc_args         text[],
    ADD COLUMN channel_id            text;                          -- plaintext Android only

ALTER TABLE push_apps
    ADD COLUMN placeholder_title_loc_key text,                      -- R-KIND-3
    ADD COLUMN placeholder_body_loc_key  text;

-- MARK: - Helpers

-- push_unit_fraction_ok: a number from 0 to 1 with at most 4 decimal places (relevance_score, a
-- critical sound's volume). PushCore's `UnitFraction` writes it as 0, 1, 0.75, 0.0001.
CREATE FUNCTION push_unit_fraction_ok(p float8) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT p >= 0 AND p <= 1 AND p::numeric = round(p::numeric, 4)
$$;

-- push_loc_text_bytes: the UTF-8 bytes of a notification's loc keys and every loc argument: their
-- part of the content floor (they are what a plaintext Android notification shows, and PushCore's
-- FCM measure counts them, `FCMMessage.ruleSize`).
CREATE FUNCTION push_loc_text_bytes(p_title_loc_key text, p_title_loc_args text[], p_body_loc_key text,
                                    p_body_loc_args text[]) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(octet_length(p_title_loc_key), 0)::bigint + coalesce(octet_length(p_body_loc_key), 0)
         + coalesce((SELECT sum(octet_length(a)) FROM unnest(p_title_loc_args) a), 0)
         + coalesce((SELECT sum(octet_length(a)) FROM unnest(p_body_loc_args) a), 0)
$$;

-- push_check_loc_args: at most 16 strings of at most 1,024 bytes each, one-dimensional, no null.
CREATE FUNCTION push_check_loc_args(p_field text, p_args text[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_bad bigint;
BEGIN
    IF p_args IS NULL THEN
        RETURN;
    END IF;
    IF array_ndims(p_args) <> 1 OR cardinality(p_args) > 16 THEN
        PERFORM push_refuse(p_field, 'at most 16 strings, in a one-dimensional array');
    END IF;
    SELECT min(u.i) - 1 INTO v_bad FROM unnest(p_args) WITH ORDINALITY AS u(arg, i)
     WHERE u.arg IS NULL OR octet_length(u.arg) > 1024;
    IF v_bad IS NOT NULL THEN
        PERFORM push_refuse(p_field, format('element %s (from 0) is not a string of at most 1024 bytes', v_bad));
    END IF;
END
$$;

-- push_check_text_bytes: refuses `p_value` (when not null) naming `p_field` unless its length is
-- from `p_min` to `p_max` bytes: as escaped in the JSON payload when `p_escaped` (the texts in clear
-- in `aps`, R-ENC-9), else its UTF-8 bytes. One check, one message for every bounded kind text.
CREATE FUNCTION push_check_text_bytes(p_field text, p_value text, p_min int, p_max int, p_escaped boolean) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    -- The CASE in parentheses: PL/pgSQL would read its first THEN as the IF's.
    IF p_value IS NULL OR (CASE WHEN p_escaped THEN push_json_text_bytes(p_value) ELSE octet_length(p_value) END
                           BETWEEN p_min AND p_max) THEN
        RETURN;
    END IF;
    PERFORM push_refuse(p_field, CASE WHEN p_min = 0 THEN format('at most %s bytes', p_max)
                                      ELSE format('must be %s to %s bytes', p_min, p_max) END
                                 || CASE WHEN p_escaped THEN ' (UTF-8, as escaped in the JSON payload)' ELSE '' END);
END
$$;

-- push_check_kind_fields: the bounds and combinations of R-KIND-1..3 (see the header), then sound
-- and thread_id as sql/0006 bounded them (at most 64 bytes each, as escaped). Mirrors PushCore's
-- `NotificationContent.validateKind` and PushAcceptance's `SendValidation` for callers that come
-- straight to push_enqueue.
CREATE FUNCTION push_check_kind_fields(
    p_push_type text, p_title text, p_body text, p_badge int, p_sound text, p_thread_id text,
    p_interruption_level text, p_relevance_score float8, p_category text, p_target_content_id text,
    p_critical_sound_name text, p_critical_sound_volume float8, p_title_loc_key text, p_title_loc_args text[],
    p_body_loc_key text, p_body_loc_args text[], p_channel_id text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_shown text;
BEGIN
    PERFORM push_check_text_bytes('sound', p_sound, 0, 64, true);
    PERFORM push_check_text_bytes('thread_id', p_thread_id, 0, 64, true);
    IF p_push_type NOT IN ('alert', 'background') THEN
        PERFORM push_refuse('push_type', 'must be alert or background');
    END IF;
    IF p_interruption_level IS NOT NULL AND p_interruption_level NOT IN ('passive', 'active', 'time-sensitive', 'critical') THEN
        PERFORM push_refuse('interruption_level', 'must be passive, active, time-sensitive or critical');
    END IF;
    IF p_relevance_score IS NOT NULL AND NOT push_unit_fraction_ok(p_relevance_score) THEN
        PERFORM push_refuse('relevance_score', 'must be a number from 0 to 1 with at most 4 decimal places');
    END IF;
    PERFORM push_check_text_bytes('category', p_category, 1, 64, true);
    PERFORM push_check_text_bytes('target_content_id', p_target_content_id, 1, 64, true);
    IF p_critical_sound_name IS NULL AND p_critical_sound_volume IS NOT NULL THEN
        PERFORM push_refuse('critical_sound.name', 'is required with critical_sound.volume');
    END IF;
    PERFORM push_check_text_bytes('critical_sound.name', p_critical_sound_name, 1, 64, true);
    IF p_critical_sound_volume IS NOT NULL AND NOT push_unit_fraction_ok(p_critical_sound_volume) THEN
        PERFORM push_refuse('critical_sound.volume', 'must be a number from 0 to 1 with at most 4 decimal places');
    END IF;
    IF coalesce(push_json_text_bytes(p_sound), 0) + coalesce(push_json_text_bytes(p_thread_id), 0)
       + coalesce(push_json_text_bytes(p_category), 0) + coalesce(push_json_text_bytes(p_target_content_id), 0)
       + coalesce(push_json_text_bytes(p_critical_sound_name), 0) > 128 THEN
        -- Named: the last of them in request order (sound and thread_id alone always fit).
        PERFORM push_refuse(CASE WHEN p_critical_sound_name IS NOT NULL THEN 'critical_sound.name'
                                 WHEN p_target_content_id IS NOT NULL THEN 'target_content_id'
                                 ELSE 'category' END,
            'sound (or critical_sound.name), thread_id, category and target_content_id together at most 128 bytes (UTF-8, as escaped in the JSON payload)');
    END IF;
    PERFORM push_check_text_bytes('title_loc_key', p_title_loc_key, 1, 256, false);
    PERFORM push_check_loc_args('title_loc_args', p_title_loc_args);
    PERFORM push_check_text_bytes('body_loc_key', p_body_loc_key, 1, 256, false);
    PERFORM push_check_loc_args('body_loc_args', p_body_loc_args);
    PERFORM push_check_text_bytes('channel_id', p_channel_id, 1, 128, false);

    -- Combinations (R-KIND-1..3), in the order PushCore checks them.
    IF p_push_type = 'background' THEN
        v_shown := CASE
            WHEN p_title IS NOT NULL THEN 'title'
            WHEN p_body IS NOT NULL THEN 'body'
            WHEN p_badge IS NOT NULL THEN 'badge'
            WHEN p_sound IS NOT NULL THEN 'sound'
            WHEN p_thread_id IS NOT NULL THEN 'thread_id'
            WHEN p_interruption_level IS NOT NULL THEN 'interruption_level'
            WHEN p_relevance_score IS NOT NULL THEN 'relevance_score'
            WHEN p_category IS NOT NULL THEN 'category'
            WHEN p_target_content_id IS NOT NULL THEN 'target_content_id'
            WHEN p_critical_sound_name IS NOT NULL THEN 'critical_sound'
            WHEN p_title_loc_key IS NOT NULL THEN 'title_loc_key'
            WHEN p_title_loc_args IS NOT NULL THEN 'title_loc_args'
            WHEN p_body_loc_key IS NOT NULL THEN 'body_loc_key'
            WHEN p_body_loc_args IS NOT NULL THEN 'body_loc_args'
            WHEN p_channel_id IS NOT NULL THEN 'channel_id'
        END;
        IF v_shown IS NOT NULL THEN
            PERFORM push_refuse(v_shown, 'a background push (push_type background) carries only data and the collapse key');
        END IF;
    END IF;
    IF p_critical_sound_name IS NOT NULL AND p_sound IS NOT NULL THEN
        PERFORM push_refuse('critical_sound', 'give sound or critical_sound, not both (both are aps.sound)');
    END IF;
    IF p_interruption_level = 'critical' AND p_critical_sound_name IS NULL THEN
        PERFORM push_refuse('interruption_level', 'critical needs critical_sound (the critical-alert sound dictionary)');
    END IF;
    IF p_critical_sound_name IS NOT NULL AND p_interruption_level IS DISTINCT FROM 'critical' THEN
        PERFORM push_refuse('critical_sound', 'only with interruption_level critical');
    END IF;
    IF p_title_loc_args IS NOT NULL AND p_title_loc_key IS NULL THEN
        PERFORM push_refuse('title_loc_args', 'needs title_loc_key');
    END IF;
    IF p_body_loc_args IS NOT NULL AND p_body_loc_key IS NULL THEN
        PERFORM push_refuse('body_loc_args', 'needs body_loc_key');
    END IF;
END
$$;

-- MARK: - Enqueue (R-SEND-1, R-SEND-7, R-SEND-9, R-SEND-13, R-LIM-1, R-API-5, R-KIND-1..3)

-- push_enqueue, as in sql/0006, with the kind fields as trailing parameters (bounded by
-- push_check_kind_fields, the loc texts counted in the content floor, compared for an idempotent
-- replay: the erasable ones only while the content is stored). The earlier signature is dropped
-- and this one takes its calls: its first 18 parameters are the same.
DROP FUNCTION push_enqueue(uuid, text, text[], uuid[], text, text, text, int, text, text, text, text, timestamptz,
                           int, text, text, text, timestamptz);

CREATE FUNCTION push_enqueue(
    p_app_id uuid, p_mode text, p_user_ids text[], p_device_ids uuid[],
    p_title text, p_body text, p_data text, p_badge int, p_sound text, p_thread_id text,
    p_collapse_key text, p_priority text, p_send_at timestamptz, p_ttl int,
    p_idempotency_key text, p_sms_phone text, p_sms_text text,
    p_now timestamptz DEFAULT now(),
    p_push_type text DEFAULT NULL, p_interruption_level text DEFAULT NULL, p_relevance_score float8 DEFAULT NULL,
    p_category text DEFAULT NULL, p_target_content_id text DEFAULT NULL, p_critical_sound_name text DEFAULT NULL,
    p_critical_sound_volume float8 DEFAULT NULL, p_title_loc_key text DEFAULT NULL, p_title_loc_args text[] DEFAULT NULL,
    p_body_loc_key text DEFAULT NULL, p_body_loc_args text[] DEFAULT NULL, p_channel_id text DEFAULT NULL)
RETURNS TABLE (notification_id uuid, created boolean)
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

    IF p_user_ids IS NULL OR cardinality(p_user_ids) = 0 THEN
        PERFORM push_refuse('user_ids', 'at least one user is required');
    END IF;
    IF array_ndims(p_user_ids) <> 1 OR cardinality(p_user_ids) > 1000 THEN
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
    IF v_floor > 4096 THEN
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
    IF p_sms_phone IS NOT NULL AND char_length(p_sms_phone) NOT BETWEEN 1 AND 32 THEN
        PERFORM push_refuse('sms_fallback.phone', 'must be 1 to 32 characters');
    END IF;
    IF p_sms_text IS NOT NULL AND char_length(p_sms_text) NOT BETWEEN 1 AND 1600 THEN
        PERFORM push_refuse('sms_fallback.text', 'must be 1 to 1600 characters');
    END IF;

    INSERT INTO push_notifications AS n (app_id, mode, user_ids, device_ids, title, body, data, badge, sound,
        thread_id, collapse_key, priority, ttl_seconds, send_at, accepted_at, expires_at, idempotency_key,
        sms_phone, sms_text, push_type, interruption_level, relevance_score, category, target_content_id,
        critical_sound_name, critical_sound_volume, title_loc_key, title_loc_args, body_loc_key, body_loc_args,
        channel_id)
    VALUES (p_app_id, p_mode, p_user_ids, p_device_ids, p_title, p_body, p_data, p_badge, p_sound,
        p_thread_id, p_collapse_key, v_priority, v_ttl, p_send_at, p_now,
        push_expires_at(p_now, p_send_at, v_ttl), p_idempotency_key, p_sms_phone, p_sms_text, v_push_type,
        p_interruption_level, p_relevance_score, p_category, p_target_content_id, p_critical_sound_name,
        p_critical_sound_volume, p_title_loc_key, v_title_loc_args, p_body_loc_key, v_body_loc_args, p_channel_id)
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
            WHEN ARRAY(SELECT DISTINCT u FROM unnest(v_prev.user_ids) u ORDER BY 1)
                 IS DISTINCT FROM ARRAY(SELECT DISTINCT u FROM unnest(p_user_ids) u ORDER BY 1) THEN 'user_ids'
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
            WHEN v_prev.sms_phone IS DISTINCT FROM p_sms_phone THEN 'sms_fallback.phone'
            WHEN v_prev.sms_text IS DISTINCT FROM p_sms_text THEN 'sms_fallback.text'
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

-- MARK: - Apps (R-APP-1, R-LIM-1, R-KIND-3)

-- push_check_app_fields, as in sql/0006 with the placeholders at most 96 bytes each (as escaped;
-- 128 before), so that the fields in clear beside an encrypted iOS payload leave at least 2,523
-- bytes of content (header). Same signature: push_app_create (sql/0006, and any later restatement
-- that calls it) applies the new bound unchanged.
CREATE OR REPLACE FUNCTION push_check_app_fields(p_name text, p_placeholder_title text, p_placeholder_body text)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_field text;
BEGIN
    IF p_name IS NOT NULL AND char_length(p_name) NOT BETWEEN 1 AND 200 THEN
        PERFORM push_refuse('name', 'must be 1 to 200 characters');
    END IF;
    SELECT u.field INTO v_field
      FROM unnest(ARRAY['placeholder_title', 'placeholder_body'], ARRAY[p_placeholder_title, p_placeholder_body])
           WITH ORDINALITY AS u(field, value, i)
     WHERE push_json_text_bytes(u.value) > 96
     ORDER BY u.i LIMIT 1;
    IF v_field IS NOT NULL THEN
        PERFORM push_refuse(v_field, 'at most 96 bytes (UTF-8, as escaped in the JSON payload)');
    END IF;
END
$$;

-- push_check_placeholder_loc_keys: the placeholder's loc keys at most 96 bytes each, as escaped
-- ('' is allowed: it removes one).
CREATE FUNCTION push_check_placeholder_loc_keys(p_title_loc_key text, p_body_loc_key text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM push_check_text_bytes('placeholder_title_loc_key', p_title_loc_key, 0, 96, true);
    PERFORM push_check_text_bytes('placeholder_body_loc_key', p_body_loc_key, 0, 96, true);
END
$$;

-- push_app_update, as in sql/0006 with the placeholder loc keys as trailing parameters (null leaves
-- one as it is, '' removes it) and the two loc key columns among its results. A new app gets its
-- loc keys through this function, in the creating transaction (`AppStore.appCreate`), so
-- push_app_create stays as it is.
DROP FUNCTION push_app_update(uuid, boolean, text, text, text);
CREATE FUNCTION push_app_update(p_id uuid, p_require_encryption boolean DEFAULT NULL,
                                p_placeholder_title text DEFAULT NULL, p_placeholder_body text DEFAULT NULL,
                                p_name text DEFAULT NULL, p_placeholder_title_loc_key text DEFAULT NULL,
                                p_placeholder_body_loc_key text DEFAULT NULL)
RETURNS TABLE (id uuid, name text, require_encryption boolean, placeholder_title text, placeholder_body text,
               deleted boolean, created_at timestamptz, updated_at timestamptz,
               placeholder_title_loc_key text, placeholder_body_loc_key text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_before boolean;
BEGIN
    PERFORM push_check_app_fields(p_name, p_placeholder_title, p_placeholder_body);
    PERFORM push_check_placeholder_loc_keys(p_placeholder_title_loc_key, p_placeholder_body_loc_key);
    SELECT a.require_encryption INTO v_before FROM push_apps a WHERE a.id = p_id AND a.deleted_at IS NULL FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'NOT_FOUND: push app % does not exist', p_id USING COLUMN = 'app_id';
    END IF;
    IF v_before AND p_require_encryption = false THEN
        INSERT INTO push_events (app_id, type, payload)
        VALUES (p_id, 'push_app.encryption_disabled', jsonb_build_object('mode', 'live'));
    END IF;
    RETURN QUERY
        UPDATE push_apps a SET require_encryption = coalesce(p_require_encryption, a.require_encryption),
                               placeholder_title = coalesce(p_placeholder_title, a.placeholder_title),
                               placeholder_body = coalesce(p_placeholder_body, a.placeholder_body),
                               placeholder_title_loc_key = CASE WHEN p_placeholder_title_loc_key IS NULL
                                   THEN a.placeholder_title_loc_key ELSE nullif(p_placeholder_title_loc_key, '') END,
                               placeholder_body_loc_key = CASE WHEN p_placeholder_body_loc_key IS NULL
                                   THEN a.placeholder_body_loc_key ELSE nullif(p_placeholder_body_loc_key, '') END,
                               name = coalesce(p_name, a.name), updated_at = now()
         WHERE a.id = p_id
        RETURNING a.id, a.name, a.require_encryption, a.placeholder_title, a.placeholder_body,
                  a.deleted_at IS NOT NULL, a.created_at, a.updated_at, a.placeholder_title_loc_key,
                  a.placeholder_body_loc_key;
END
$$;
