-- push_webhook_claim: push_outbox_claim for webhook rows, each with its event and endpoint. Two
-- statements: the claim's own statements take snapshots newer than any enclosing statement's, so a
-- join in the same statement could claim a row whose event (written by the same transaction, and
-- committed in between) it does not yet see. Reading the events and endpoints in a statement of
-- their own, after the claim, sees every row claimed. Primary keys of push_events and
-- push_webhook_endpoints.
CREATE FUNCTION push_webhook_claim(p_owner text, p_limit int, p_per_key int, p_lease_seconds float8,
                                   p_now timestamptz DEFAULT now())
RETURNS TABLE (id bigint, fair_key uuid, attempts int, failures int, lease_token uuid, window_started_at timestamptz,
               public_id uuid, type text, payload text, created_at timestamptz, app_id uuid,
               url text, mode text, enabled boolean, secret_sealed bytea, previous_secret_sealed bytea,
               previous_secret_expires_at timestamptz, failing_since timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_ids bigint[];
    v_keys uuid[];
    v_refs bigint[];
    v_attempts int[];
    v_failures int[];
    v_tokens uuid[];
    v_windows timestamptz[];
BEGIN
    SELECT array_agg(c.id), array_agg(c.fair_key), array_agg(c.ref_id), array_agg(c.attempts), array_agg(c.failures),
           array_agg(c.lease_token), array_agg(c.window_started_at)
      INTO v_ids, v_keys, v_refs, v_attempts, v_failures, v_tokens, v_windows
      FROM push_outbox_claim('webhook', p_owner, p_limit, p_per_key, p_lease_seconds, p_now) c;
    IF v_ids IS NULL THEN
        RETURN;
    END IF;
    RETURN QUERY
    SELECT c.id, c.fair_key, c.attempts, c.failures, c.lease_token, c.window_started_at,
           e.public_id, e.type, e.payload::text, e.created_at, e.app_id,
           ep.url, ep.mode, ep.enabled, ep.secret_sealed, ep.previous_secret_sealed, ep.previous_secret_expires_at,
           ep.failing_since
      FROM unnest(v_ids, v_keys, v_refs, v_attempts, v_failures, v_tokens, v_windows)
           AS c(id, fair_key, ref_id, attempts, failures, lease_token, window_started_at)
      LEFT JOIN push_events e ON e.id = c.ref_id
      LEFT JOIN push_webhook_endpoints ep ON ep.id = c.fair_key;
END
$$;
