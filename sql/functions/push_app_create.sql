-- push_app_create: a new app (R-APP-1 defaults for what is null: require_encryption false,
-- placeholder_title 'New notification', placeholder_body ''), its fields bounded, owned by
-- p_account_id (R-API-1; NULL: the default account of sql/0008). NOT_FOUND for an unknown account.
CREATE FUNCTION push_app_create(p_name text, p_require_encryption boolean DEFAULT NULL,
                                p_placeholder_title text DEFAULT NULL, p_placeholder_body text DEFAULT NULL,
                                p_account_id uuid DEFAULT NULL)
RETURNS TABLE (id uuid, name text, require_encryption boolean, placeholder_title text, placeholder_body text,
               deleted boolean, created_at timestamptz, updated_at timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_account uuid := coalesce(p_account_id, push_default_account());
BEGIN
    IF p_name IS NULL THEN
        PERFORM push_refuse('name', 'is required');
    END IF;
    PERFORM push_check_app_fields(p_name, p_placeholder_title, p_placeholder_body);
    PERFORM 1 FROM push_accounts c WHERE c.id = v_account;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'NOT_FOUND: account % does not exist', v_account USING COLUMN = 'account_id';
    END IF;
    RETURN QUERY
        INSERT INTO push_apps AS a (name, require_encryption, placeholder_title, placeholder_body, account_id)
        VALUES (p_name, coalesce(p_require_encryption, false), coalesce(p_placeholder_title, 'New notification'),
                coalesce(p_placeholder_body, ''), v_account)
        RETURNING a.id, a.name, a.require_encryption, a.placeholder_title, a.placeholder_body,
                  a.deleted_at IS NOT NULL, a.created_at, a.updated_at;
END
$$;
