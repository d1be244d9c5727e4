-- push_app_update: changes the given fields of an app (nil leaves one as it is, '' removes a
-- placeholder loc key); turning require_encryption off records push_app.encryption_disabled.
-- content_mode (sql/0019, R-IDS-1): sealed or ids_only, read by the worker at each notification's
-- send time (push_start_notifications), so it applies to notifications already queued too.
CREATE FUNCTION push_app_update(p_id uuid, p_require_encryption boolean DEFAULT NULL,
                                p_placeholder_title text DEFAULT NULL, p_placeholder_body text DEFAULT NULL,
                                p_name text DEFAULT NULL, p_placeholder_title_loc_key text DEFAULT NULL,
                                p_placeholder_body_loc_key text DEFAULT NULL, p_content_mode text DEFAULT NULL)
RETURNS TABLE (id uuid, name text, require_encryption boolean, placeholder_title text, placeholder_body text,
               deleted boolean, created_at timestamptz, updated_at timestamptz,
               placeholder_title_loc_key text, placeholder_body_loc_key text, content_mode text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_before boolean;
BEGIN
    PERFORM push_check_app_fields(p_name, p_placeholder_title, p_placeholder_body);
    PERFORM push_check_placeholder_loc_keys(p_placeholder_title_loc_key, p_placeholder_body_loc_key);
    IF p_content_mode IS NOT NULL AND p_content_mode NOT IN ('sealed', 'ids_only') THEN
        PERFORM push_refuse('content_mode', 'must be sealed or ids_only');
    END IF;
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
                               placeholder_title_loc_key = CASE WHEN p_placeholder_title_loc_key IS NULL
                                   THEN a.placeholder_title_loc_key ELSE nullif(p_placeholder_title_loc_key, '') END,
                               placeholder_body_loc_key = CASE WHEN p_placeholder_body_loc_key IS NULL
                                   THEN a.placeholder_body_loc_key ELSE nullif(p_placeholder_body_loc_key, '') END,
                               content_mode = coalesce(p_content_mode, a.content_mode),
                               name = coalesce(p_name, a.name), updated_at = now()
         WHERE a.id = p_id
        RETURNING a.id, a.name, a.require_encryption, a.placeholder_title, a.placeholder_body,
                  a.deleted_at IS NOT NULL, a.created_at, a.updated_at, a.placeholder_title_loc_key,
                  a.placeholder_body_loc_key, a.content_mode;
END
$$;
