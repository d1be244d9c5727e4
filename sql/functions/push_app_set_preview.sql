-- push_app_set_preview: an app's confirmed-delivery switch and preview window (issue 24 parts 4
-- and 5, R-IDS-4), each left unchanged when NULL, and the app as stored (every column
-- `AppStore.decode` reads). Bounds (R-LIM-1): the window is 60 s to 28 days (2,419,200 s, the
-- longest TTL); a notification's own window never passes its expiry either (push_preview_until).
-- No row for an unknown or deleted app. Turning confirm_deliveries on sets
-- `confirm_deliveries_since` (sql/0022) to now, turning it off clears it, setting it to what it is
-- keeps it: the deliveries that count towards the confirmation rate are the ones sent (finished)
-- since then (PreviewQueries, the worker's pushfleet_pushes_sent_total).
CREATE OR REPLACE FUNCTION push_app_set_preview(p_app_id uuid, p_confirm_deliveries boolean, p_preview_window_seconds int)
RETURNS TABLE (id uuid, name text, require_encryption boolean, placeholder_title text, placeholder_body text,
               placeholder_title_loc_key text, placeholder_body_loc_key text, confirm_deliveries boolean,
               preview_window_seconds int, deleted boolean, created_at timestamptz, updated_at timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    IF p_preview_window_seconds IS NOT NULL AND p_preview_window_seconds NOT BETWEEN 60 AND 2419200 THEN
        PERFORM push_refuse('preview_window_seconds', 'must be 60 to 2419200 seconds (28 days)');
    END IF;
    IF p_confirm_deliveries IS NOT NULL OR p_preview_window_seconds IS NOT NULL THEN
        UPDATE push_apps a
           SET confirm_deliveries = coalesce(p_confirm_deliveries, a.confirm_deliveries),
               preview_window_seconds = coalesce(p_preview_window_seconds, a.preview_window_seconds),
               confirm_deliveries_since = CASE WHEN p_confirm_deliveries IS NULL OR p_confirm_deliveries = a.confirm_deliveries
                                               THEN a.confirm_deliveries_since
                                               WHEN p_confirm_deliveries THEN clock_timestamp() END,
               updated_at = CASE WHEN (p_confirm_deliveries IS NOT NULL AND p_confirm_deliveries <> a.confirm_deliveries)
                                   OR (p_preview_window_seconds IS NOT NULL AND p_preview_window_seconds <> a.preview_window_seconds)
                                 THEN now() ELSE a.updated_at END
         WHERE a.id = p_app_id AND a.deleted_at IS NULL;
    END IF;
    RETURN QUERY
    SELECT a.id, a.name, a.require_encryption, a.placeholder_title, a.placeholder_body, a.placeholder_title_loc_key,
           a.placeholder_body_loc_key, a.confirm_deliveries, a.preview_window_seconds, a.deleted_at IS NOT NULL,
           a.created_at, a.updated_at
      FROM push_apps a WHERE a.id = p_app_id AND a.deleted_at IS NULL;
END
$$;
