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
