-- push_app_create: a new app (R-APP-1 defaults for what is null: require_encryption false,
-- placeholder_title 'New notification', placeholder_body ''), its fields bounded.
CREATE FUNCTION push_app_create(p_name text, p_require_encryption boolean DEFAULT NULL,
                                p_placeholder_title text DEFAULT NULL, p_placeholder_body text DEFAULT NULL)
RETURNS TABLE (id uuid, name text, require_encryption boolean, placeholder_title text, placeholder_body text,
               deleted boolean, created_at timestamptz, updated_at timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    IF p_name IS NULL THEN
        PERFORM push_refuse('name', 'is required');
    END IF;
    PERFORM push_check_app_fields(p_name, p_placeholder_title, p_placeholder_body);
    RETURN QUERY
        INSERT INTO push_apps AS a (name, require_encryption, placeholder_title, placeholder_body)
        VALUES (p_name, coalesce(p_require_encryption, false), coalesce(p_placeholder_title, 'New notification'),
                coalesce(p_placeholder_body, ''))
        RETURNING a.id, a.name, a.require_encryption, a.placeholder_title, a.placeholder_body,
                  a.deleted_at IS NOT NULL, a.created_at, a.updated_at;
END
$$;
