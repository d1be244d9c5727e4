-- Expiry (R-SEND-10): max(accepted, send_at) + ttl.
CREATE FUNCTION push_expires_at(p_accepted timestamptz, p_send_at timestamptz, p_ttl int) RETURNS timestamptz
LANGUAGE sql IMMUTABLE AS $$
    SELECT greatest(p_accepted, coalesce(p_send_at, p_accepted)) + make_interval(secs => p_ttl)
$$;
