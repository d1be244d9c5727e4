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
