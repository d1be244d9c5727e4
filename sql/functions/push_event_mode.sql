-- R-MODE-1: the mode an event belongs to. Device and notification events carry theirs;
-- credential and app-policy events are live (credentials serve live mode only, R-APP-3; changing
-- require_encryption is a live credential's change in the API).
CREATE FUNCTION push_event_mode(p_payload jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(p_payload ->> 'mode', 'live')
$$;
