-- push_app_update: changes the given fields (null leaves one as it is) of an app that is not
-- deleted; NOT_FOUND otherwise. The policy takes effect for notifications already queued too
-- (R-APP-2: read at send time). Turning require_encryption off records a
-- push_app.encryption_disabled event for the live mode (issue 14: visible, since an API cannot ask
-- for confirmation), in the same transaction (R-PRV-4).
CREATE FUNCTION push_app_update(p_id uuid, p_require_encryption boolean DEFAULT NULL,
                                p_placeholder_title text DEFAULT NULL, p_placeholder_body text DEFAULT NULL,
                                p_name text DEFAULT NULL)
RETURNS TABLE (id uuid, name text, require_encryption boolean, placeholder_title text, placeholder_body text,
               deleted boolean, created_at timestamptz, updated_at timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_before boolean;
BEGIN
    PERFORM push_check_app_fields(p_name, p_placeholder_title, p_placeholder_body);
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
                               name = coalesce(p_name, a.name), updated_at = now()
         WHERE a.id = p_id
        RETURNING a.id, a.name, a.require_encryption, a.placeholder_title, a.placeholder_body,
                  a.deleted_at IS NOT NULL, a.created_at, a.updated_at;
END
$$;
