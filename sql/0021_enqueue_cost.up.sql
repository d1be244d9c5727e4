-- The database's cost per notification: enqueue (issue 17, part 4). Expand-then-contract: four
-- functions restated with their names, signatures, answers, bounds, messages and order, so a worker
-- or an API of the previous release keeps working; no table changes.
--
-- What push_enqueue paid per call beyond its three rows (pg_stat_statements with nested statements
-- and planning, perf on the backends; 2 sessions of single-user calls): the charges' INSERT ... SELECT
-- was planned again at every call (plan_cache_mode below); push_loc_text_bytes and
-- push_json_text_bytes are SQL functions the planner did not inline (a subquery; a STABLE body
-- declared IMMUTABLE), so each call parsed and planned their bodies; and push_check_kind_fields ran
-- ten PERFORMs (each a statement with its own executor) for fields that are absent.

-- push_json_text_bytes(text): the text of sql/functions/push_json_text_bytes.sql.
CREATE OR REPLACE FUNCTION push_json_text_bytes(p text) RETURNS int
LANGUAGE sql STABLE STRICT PARALLEL SAFE AS $$
    SELECT octet_length(to_json(p)::text) - 2
$$;

-- push_loc_text_bytes(text,text[],text,text[]): the text of sql/functions/push_loc_text_bytes.sql.
CREATE OR REPLACE FUNCTION push_loc_text_bytes(p_title_loc_key text, p_title_loc_args text[], p_body_loc_key text,
                                    p_body_loc_args text[]) RETURNS bigint
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT coalesce(octet_length(p_title_loc_key), 0)::bigint + coalesce(octet_length(p_body_loc_key), 0)
         + coalesce(octet_length(array_to_string(p_title_loc_args, '')), 0)
         + coalesce(octet_length(array_to_string(p_body_loc_args, '')), 0)
$$;

-- push_check_kind_fields(text,text,text,int,text,text,text,float8,text,text,text,float8,text,text[],text,text[],text): the text of sql/functions/push_check_kind_fields.sql.
CREATE OR REPLACE FUNCTION push_check_kind_fields(
    p_push_type text, p_title text, p_body text, p_badge int, p_sound text, p_thread_id text,
    p_interruption_level text, p_relevance_score float8, p_category text, p_target_content_id text,
    p_critical_sound_name text, p_critical_sound_volume float8, p_title_loc_key text, p_title_loc_args text[],
    p_body_loc_key text, p_body_loc_args text[], p_channel_id text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_shown text;
BEGIN
    IF p_sound IS NOT NULL THEN
        PERFORM push_check_text_bytes('sound', p_sound, 0, 64, true);
    END IF;
    IF p_thread_id IS NOT NULL THEN
        PERFORM push_check_text_bytes('thread_id', p_thread_id, 0, 64, true);
    END IF;
    IF p_push_type NOT IN ('alert', 'background') THEN
        PERFORM push_refuse('push_type', 'must be alert or background');
    END IF;
    IF p_interruption_level IS NOT NULL AND p_interruption_level NOT IN ('passive', 'active', 'time-sensitive', 'critical') THEN
        PERFORM push_refuse('interruption_level', 'must be passive, active, time-sensitive or critical');
    END IF;
    IF p_relevance_score IS NOT NULL AND NOT push_unit_fraction_ok(p_relevance_score) THEN
        PERFORM push_refuse('relevance_score', 'must be a number from 0 to 1 with at most 4 decimal places');
    END IF;
    IF p_category IS NOT NULL THEN
        PERFORM push_check_text_bytes('category', p_category, 1, 64, true);
    END IF;
    IF p_target_content_id IS NOT NULL THEN
        PERFORM push_check_text_bytes('target_content_id', p_target_content_id, 1, 64, true);
    END IF;
    IF p_critical_sound_name IS NULL AND p_critical_sound_volume IS NOT NULL THEN
        PERFORM push_refuse('critical_sound.name', 'is required with critical_sound.volume');
    END IF;
    IF p_critical_sound_name IS NOT NULL THEN
        PERFORM push_check_text_bytes('critical_sound.name', p_critical_sound_name, 1, 64, true);
    END IF;
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
    IF p_title_loc_key IS NOT NULL THEN
        PERFORM push_check_text_bytes('title_loc_key', p_title_loc_key, 1, 256, false);
    END IF;
    IF p_title_loc_args IS NOT NULL THEN
        PERFORM push_check_loc_args('title_loc_args', p_title_loc_args);
    END IF;
    IF p_body_loc_key IS NOT NULL THEN
        PERFORM push_check_text_bytes('body_loc_key', p_body_loc_key, 1, 256, false);
    END IF;
    IF p_body_loc_args IS NOT NULL THEN
        PERFORM push_check_loc_args('body_loc_args', p_body_loc_args);
    END IF;
    IF p_channel_id IS NOT NULL THEN
        PERFORM push_check_text_bytes('channel_id', p_channel_id, 1, 128, false);
    END IF;

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

