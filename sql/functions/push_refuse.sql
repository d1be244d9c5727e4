-- push_refuse: raises `VALIDATION_ERROR: <field>: <why>` with the field as the error's column name.
CREATE FUNCTION push_refuse(p_field text, p_why text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'VALIDATION_ERROR: %: %', p_field, p_why USING COLUMN = p_field;
END
$$;
