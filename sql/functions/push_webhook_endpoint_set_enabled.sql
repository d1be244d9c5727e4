-- Enables or disables an endpoint. Disabling fails its pending rows (push_webhook_fail_pending);
-- enabling clears the 5-day clock. Returns the row, or nothing for an unknown id.
CREATE FUNCTION push_webhook_endpoint_set_enabled(p_id uuid, p_enabled boolean, p_reason text,
                                                  p_now timestamptz DEFAULT now())
RETURNS SETOF push_webhook_endpoints
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE push_webhook_endpoints
       SET enabled = p_enabled,
           disabled_reason = CASE WHEN p_enabled THEN NULL ELSE coalesce(disabled_reason, p_reason) END,
           disabled_at = CASE WHEN p_enabled THEN NULL ELSE coalesce(disabled_at, p_now) END,
           failing_since = CASE WHEN p_enabled THEN NULL ELSE failing_since END,
           updated_at = p_now
     WHERE id = p_id;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF NOT p_enabled THEN
        PERFORM push_webhook_fail_pending(ARRAY[p_id], p_now);
    END IF;
    RETURN QUERY SELECT * FROM push_webhook_endpoints WHERE id = p_id;
END
$$;
