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
