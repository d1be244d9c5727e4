-- push_webhook_record: what the dispatcher learnt from finished attempts, in one round trip.
-- Per attempt (parallel arrays): the outbox row's outcome (push_outbox_settle, lease-guarded:
-- only rows still held are recorded and returned), its attempt log row, and whether its failure
-- counts toward the endpoint's 5-day rule. The decisions (retry time, final failure, which
-- endpoints to disable and why) are PushCore's (WebhookAttemptDecision); this function applies
-- them: endpoints to disable are disabled and their available rows failed, a row set to retry for
-- an endpoint that is disabled meanwhile fails instead, each endpoint's health (failing_since,
-- last success and failure) follows its attempts in time order, and events whose rows are all
-- final are finished.
CREATE FUNCTION push_webhook_record(
    p_ids bigint[], p_tokens uuid[], p_states text[], p_run_at timestamptz[], p_errors text[],
    p_status_codes int[], p_attempted_at timestamptz[], p_duration_ms int[], p_responses text[],
    p_endpoint_failures boolean[], p_disable_endpoints uuid[], p_disable_reasons text[],
    p_now timestamptz DEFAULT now())
RETURNS TABLE (outbox_id bigint)
LANGUAGE plpgsql AS $$
DECLARE
    v_disabled uuid[];
    v_off uuid[];
    v_ids bigint[];
    v_keys uuid[];
    v_refs bigint[];
    v_attempts int[];
    v_states text[];
    v_ord bigint[];
BEGIN
    -- sql/LOCK_ORDER.md: the endpoints of the call, by id, before any write (the health update and
    -- the disabling below, and any other record or disabling of them, wait here in the same order).
    PERFORM 1 FROM push_webhook_endpoints
     WHERE id IN (SELECT o.fair_key FROM push_outbox o WHERE o.id = ANY (p_ids)) OR id = ANY (p_disable_endpoints)
     ORDER BY id FOR UPDATE;
    IF cardinality(p_disable_endpoints) > 0 THEN
        WITH off AS (
            UPDATE push_webhook_endpoints ep
               SET enabled = false, disabled_reason = d.reason, disabled_at = p_now, updated_at = p_now
              FROM unnest(p_disable_endpoints, p_disable_reasons) AS d(id, reason)
             WHERE ep.id = d.id AND ep.enabled
            RETURNING ep.id
        )
        SELECT array_agg(off.id) INTO v_disabled FROM off;
    END IF;

    -- The rows still held, settled (one primary-key probe each), as parallel arrays with each
    -- one's index in p_ids.
    WITH u AS (
        SELECT * FROM unnest(p_ids, p_states) WITH ORDINALITY AS u(id, state, ord)
    ), settled AS (
        SELECT st.id, st.fair_key, st.ref_id, st.attempts, st.state
          FROM push_outbox_settle('webhook', p_ids, p_tokens, p_states, p_run_at,
                                  ARRAY(SELECT u.state <> 'done' FROM u ORDER BY u.ord), p_errors, p_now) st
    )
    SELECT array_agg(st.id), array_agg(st.fair_key), array_agg(st.ref_id), array_agg(st.attempts),
           array_agg(st.state), array_agg(u.ord)
      INTO v_ids, v_keys, v_refs, v_attempts, v_states, v_ord
      FROM settled st JOIN u ON u.id = st.id;
    IF v_ids IS NULL THEN
        RETURN;
    END IF;

    -- The events about to be finished, by id (sql/LOCK_ORDER.md).
    PERFORM 1 FROM push_events
     WHERE id IN (SELECT x.ref FROM unnest(v_refs, v_states) AS x(ref, state) WHERE x.state IN ('done', 'failed'))
     ORDER BY id FOR UPDATE;

    -- One statement for the rest: the attempt log, the endpoints' health (R-HOOK-2: the last
    -- success clears failing_since; a counted failure after it, or with none, starts it; an earlier
    -- start is kept), the events whose rows are now all final, and the endpoints whose rows were
    -- just set to retry although they no longer take events (disabled or deleted meanwhile).
    WITH s AS (
        SELECT x.*, p_attempted_at[x.ord] AS at, p_states[x.ord] = 'done' AS ok,
               coalesce(p_endpoint_failures[x.ord], false) AS counts
          FROM unnest(v_ids, v_keys, v_refs, v_attempts, v_states, v_ord) AS x(id, fair_key, ref_id, attempts, state, ord)
    ), logged AS (
        INSERT INTO push_webhook_attempts (outbox_id, attempt, endpoint_id, event_id, attempted_at, result, status_code,
                                           error, duration_ms, response)
        SELECT s.id, s.attempts, s.fair_key, s.ref_id, s.at,
               CASE s.state WHEN 'done' THEN 'delivered' WHEN 'available' THEN 'retry' ELSE 'failed' END,
               p_status_codes[s.ord], left(p_errors[s.ord], 500), p_duration_ms[s.ord], left(p_responses[s.ord], 256)
          FROM s
        ON CONFLICT DO NOTHING
    ), per AS (
        SELECT s.fair_key, max(s.at) FILTER (WHERE s.ok) AS last_ok, max(s.at) FILTER (WHERE s.counts) AS last_fail
          FROM s GROUP BY s.fair_key
    ), health AS (
        UPDATE push_webhook_endpoints ep
           SET failing_since = CASE WHEN per.last_ok IS NOT NULL
                                    THEN (SELECT min(s.at) FROM s WHERE s.fair_key = per.fair_key AND s.counts
                                             AND s.at > per.last_ok)
                                    ELSE coalesce(ep.failing_since,
                                                  (SELECT min(s.at) FROM s WHERE s.fair_key = per.fair_key AND s.counts)) END,
               last_success_at = greatest(ep.last_success_at, per.last_ok),
               last_failure_at = greatest(ep.last_failure_at, per.last_fail)
          FROM per
         WHERE ep.id = per.fair_key AND (per.last_ok IS NOT NULL OR per.last_fail IS NOT NULL)
        RETURNING ep.id, ep.enabled
    ), finished AS (
        UPDATE push_events ev SET delivered_at = p_now
          FROM (SELECT DISTINCT s.ref_id FROM s WHERE s.state IN ('done', 'failed')) f
         WHERE ev.id = f.ref_id AND ev.delivered_at IS NULL
           AND NOT EXISTS (SELECT 1 FROM push_outbox o
                            WHERE o.kind = 'webhook' AND o.ref_id = ev.id AND o.finished_at IS NULL)
    )
    SELECT array_agg(DISTINCT s.fair_key) INTO v_off
      FROM s LEFT JOIN push_webhook_endpoints ep ON ep.id = s.fair_key
     WHERE s.state = 'available' AND coalesce(ep.enabled, false) = false;

    IF v_disabled IS NOT NULL OR v_off IS NOT NULL THEN
        PERFORM push_webhook_fail_pending(coalesce(v_disabled, '{}') || coalesce(v_off, '{}'), p_now);
    END IF;
    RETURN QUERY SELECT unnest(v_ids);
END
$$;
