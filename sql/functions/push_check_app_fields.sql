-- push_check_app_fields: the bounds of an app's fields (null = not given): name 1 to 200
-- characters; placeholder_title and placeholder_body at most 128 bytes each, as escaped in the
-- JSON payload. With sound and thread_id (64 each) and the largest badge, the fields in clear
-- beside an encrypted iOS payload then leave it at least 2,582 bytes of content (R-LIM-1: at
-- least 2,500; `AcceptanceLimitsTests` computes it with PushCore's size rule).
CREATE FUNCTION push_check_app_fields(p_name text, p_placeholder_title text, p_placeholder_body text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF p_name IS NOT NULL AND char_length(p_name) NOT BETWEEN 1 AND 200 THEN
        PERFORM push_refuse('name', 'must be 1 to 200 characters');
    END IF;
    IF p_placeholder_title IS NOT NULL AND push_json_text_bytes(p_placeholder_title) > 128 THEN
        PERFORM push_refuse('placeholder_title', 'at most 128 bytes (UTF-8, as escaped in the JSON payload)');
    END IF;
    IF p_placeholder_body IS NOT NULL AND push_json_text_bytes(p_placeholder_body) > 128 THEN
        PERFORM push_refuse('placeholder_body', 'at most 128 bytes (UTF-8, as escaped in the JSON payload)');
    END IF;
END
$$;
