-- Creates an endpoint; at most p_max per app and mode (the app row is locked so that parallel
-- creations take turns). Raises NOT_FOUND for a missing or deleted app.
CREATE FUNCTION push_webhook_endpoint_create(p_id uuid, p_app_id uuid, p_mode text, p_url text,
                                             p_event_types text[], p_secret bytea, p_max int)
RETURNS SETOF push_webhook_endpoints
LANGUAGE plpgsql AS $$
DECLARE
    v_count int;
BEGIN
    PERFORM 1 FROM push_apps WHERE id = p_app_id AND deleted_at IS NULL FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'NOT_FOUND: push app % does not exist', p_app_id;
    END IF;
    SELECT count(*) INTO v_count FROM push_webhook_endpoints WHERE app_id = p_app_id AND mode = p_mode;
    IF v_count >= p_max THEN
        RAISE EXCEPTION 'VALIDATION_ERROR: the app already has % % webhook endpoints, the limit', v_count, p_mode;
    END IF;
    RETURN QUERY
    INSERT INTO push_webhook_endpoints (id, app_id, mode, url, event_types, secret_sealed)
    VALUES (p_id, p_app_id, p_mode, p_url, p_event_types, p_secret)
    RETURNING *;
END
$$;
