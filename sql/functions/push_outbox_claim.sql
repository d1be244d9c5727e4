-- push_outbox_claim: up to p_limit due rows of p_kind for p_owner, leased for p_lease_seconds.
-- 1. Keys with an available row, by a skip scan of push_outbox_due_idx (one probe per key), whose
--    oldest row is due; the longest-waiting first, at most p_limit of them, each locked for this
--    transaction (pg_try_advisory_xact_lock; a key another claim holds is skipped, never waited on).
-- 2. In a new statement (so a fresh snapshot sees every claim committed before the key locks were
--    taken): per key, room = p_per_key minus its running rows, and that many due rows, oldest first;
--    turns across keys (every key's first row, then every key's second...); rows another session
--    holds are skipped (FOR UPDATE SKIP LOCKED). At most p_per_key rows of a key run at once across
--    the fleet, whatever the number of workers; a key whose rows hang holds only its own room.
CREATE FUNCTION push_outbox_claim(p_kind text, p_owner text, p_limit int, p_per_key int, p_lease_seconds float8,
                                  p_now timestamptz DEFAULT now())
RETURNS TABLE (id bigint, fair_key uuid, ref_id bigint, attempts int, failures int, lease_token uuid,
               window_started_at timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_keys uuid[];
BEGIN
    WITH RECURSIVE k AS (
        (SELECT o.fair_key AS key FROM push_outbox o
          WHERE o.kind = p_kind AND o.state = 'available' ORDER BY o.fair_key LIMIT 1)
        UNION ALL
        SELECT (SELECT o.fair_key FROM push_outbox o
                 WHERE o.kind = p_kind AND o.state = 'available' AND o.fair_key > k.key
                 ORDER BY o.fair_key LIMIT 1)
          FROM k WHERE k.key IS NOT NULL
    ), due AS (
        SELECT k.key, d.run_at FROM k
         CROSS JOIN LATERAL (SELECT o.run_at FROM push_outbox o
                              WHERE o.kind = p_kind AND o.state = 'available' AND o.fair_key = k.key
                              ORDER BY o.run_at LIMIT 1) d
         WHERE k.key IS NOT NULL AND d.run_at <= p_now
           -- a key already at its bound (on this snapshot) would only take a place in the claim
           AND (SELECT count(*) FROM push_outbox r
                 WHERE r.kind = p_kind AND r.state = 'running' AND r.fair_key = k.key) < p_per_key
         ORDER BY d.run_at
         LIMIT p_limit
    )
    SELECT array_agg(due.key ORDER BY due.run_at) INTO v_keys
      FROM due
     WHERE pg_try_advisory_xact_lock(hashtext(p_kind), hashtext(due.key::text));
    IF v_keys IS NULL THEN
        RETURN;
    END IF;

    RETURN QUERY
    WITH room AS (
        SELECT k.key, k.ord,
               p_per_key - (SELECT count(*) FROM push_outbox r
                             WHERE r.kind = p_kind AND r.state = 'running' AND r.fair_key = k.key)::int AS free
          FROM unnest(v_keys) WITH ORDINALITY AS k(key, ord)
    ), candidates AS (
        -- Each key's due rows up to its room, oldest first (push_outbox_due_idx gives them in that
        -- order), locked here: rows another session holds (a record, maintenance) are skipped.
        -- The turn is numbered after each key's LIMIT (a window function inside the LATERAL would
        -- read every due row of the key first).
        SELECT c.id, room.ord, row_number() OVER (PARTITION BY room.key ORDER BY c.run_at, c.id) AS turn
          FROM room
         CROSS JOIN LATERAL (SELECT o.id, o.run_at FROM push_outbox o
                              WHERE o.kind = p_kind AND o.state = 'available' AND o.fair_key = room.key
                                AND o.run_at <= p_now
                              ORDER BY o.run_at, o.id
                              LIMIT greatest(room.free, 0)
                                FOR UPDATE SKIP LOCKED) c
    ), picked AS (
        SELECT candidates.id FROM candidates ORDER BY candidates.turn, candidates.ord LIMIT p_limit
    ), claimed AS (
        UPDATE push_outbox o
           SET state = 'running', attempts = o.attempts + 1, lease_owner = p_owner, lease_token = gen_random_uuid(),
               lease_expires_at = p_now + make_interval(secs => p_lease_seconds),
               window_started_at = coalesce(o.window_started_at, p_now)
          FROM picked WHERE o.id = picked.id
        RETURNING o.id, o.fair_key, o.ref_id, o.attempts, o.failures, o.lease_token, o.window_started_at
    )
    SELECT * FROM claimed;
END
$$;
