-- push_check_placeholder_loc_keys: the placeholder's loc keys at most 96 bytes each, as escaped
-- ('' is allowed: it removes one).
CREATE FUNCTION push_check_placeholder_loc_keys(p_title_loc_key text, p_body_loc_key text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM push_check_text_bytes('placeholder_title_loc_key', p_title_loc_key, 0, 96, true);
    PERFORM push_check_text_bytes('placeholder_body_loc_key', p_body_loc_key, 0, 96, true);
END
$$;
