-- Shape bounds of an endpoint's event types, at the SQL boundary too; which types exist is PushCore's
-- WebhookEventType, checked before the row is written.
CREATE FUNCTION push_webhook_types_ok(p_types text[]) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT cardinality(p_types) BETWEEN 1 AND 16
       AND NOT EXISTS (SELECT 1 FROM unnest(p_types) t
                        WHERE t IS NULL OR char_length(t) > 64 OR t !~ '^[a-z_]+\.[a-z_]+$')
$$;
