-- push_outbox_rescue: rows whose lease expired (their worker died or lost the database) are
-- available again at once, or failed ('LEASE_EXPIRED') when their window (p_window_seconds from
-- their first attempt) has passed. At most p_limit rows, oldest lease first
-- (push_outbox_running_idx: the rows in flight). Returns the rows rescued and failed.
CREATE FUNCTION push_outbox_rescue(p_kind text, p_window_seconds float8, p_limit int, p_now timestamptz DEFAULT now())
RETURNS TABLE (id bigint, ref_id bigint, state text)
LANGUAGE sql AS $$
    UPDATE push_outbox o
       SET state = CASE WHEN o.window_started_at < p_now - make_interval(secs => p_window_seconds)
                        THEN 'failed' ELSE 'available' END,
           last_error = 'LEASE_EXPIRED', run_at = p_now,
           finished_at = CASE WHEN o.window_started_at < p_now - make_interval(secs => p_window_seconds)
                              THEN p_now END,
           lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL
     WHERE o.id IN (SELECT x.id FROM push_outbox x
                     WHERE x.kind = p_kind AND x.state = 'running' AND x.lease_expires_at < p_now
                     ORDER BY x.lease_expires_at LIMIT p_limit
                       FOR UPDATE SKIP LOCKED)
       AND o.state = 'running' AND o.lease_expires_at < p_now
    RETURNING o.id, o.ref_id, o.state
$$;
