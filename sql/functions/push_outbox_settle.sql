-- push_outbox_settle: the outcome of claimed rows, each guarded by its lease token (a row whose
-- lease was lost, rescued or re-claimed is left alone and not returned). A row has a token only
-- while running (CHECK above), so the token match is the whole guard; matching on the primary key
-- and the token only (no state predicate) keeps the plan a primary-key probe per row whatever the
-- statistics say about running rows. p_states: 'done' or
-- 'failed' (final), or 'available' to try again at p_run_at. p_failed counts the attempt as a
-- failure of the current window (the backoff's n).
CREATE FUNCTION push_outbox_settle(p_kind text, p_ids bigint[], p_tokens uuid[], p_states text[],
                                   p_run_at timestamptz[], p_failed boolean[], p_errors text[],
                                   p_now timestamptz DEFAULT now())
RETURNS TABLE (id bigint, fair_key uuid, ref_id bigint, attempts int, state text)
LANGUAGE sql AS $$
    UPDATE push_outbox o
       SET state = s.state, run_at = coalesce(s.run_at, o.run_at),
           failures = o.failures + CASE WHEN s.failed THEN 1 ELSE 0 END,
           last_error = left(s.error, 500), lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL,
           finished_at = CASE WHEN s.state IN ('done', 'failed') THEN p_now END
      FROM unnest(p_ids, p_tokens, p_states, p_run_at, p_failed, p_errors) AS s(id, token, state, run_at, failed, error)
     WHERE o.id = s.id AND o.lease_token = s.token AND o.kind = p_kind
       AND s.state IN ('available', 'done', 'failed')
    RETURNING o.id, o.fair_key, o.ref_id, o.attempts, o.state
$$;
