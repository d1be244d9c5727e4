-- Expiry (R-SEND-10): max(accepted, send_at) + ttl.
-- STABLE since sql/0013 (issue 17), as its body is (timestamptz + interval): declared IMMUTABLE, the
-- planner would not inline it, and every push_enqueue parsed and planned it again.
CREATE FUNCTION push_expires_at(p_accepted timestamptz, p_send_at timestamptz, p_ttl int) RETURNS timestamptz
LANGUAGE sql STABLE AS $$
    SELECT greatest(p_accepted, coalesce(p_send_at, p_accepted)) + make_interval(secs => p_ttl)
$$;
