-- Webhooks (issue 19; R-HOOK-1..3, R-PRV-4, R-MODE-1): endpoints per app and mode, and a leased
-- outbox that carries each recorded event to each endpoint that wants it, at least once.
--
-- The outbox (push_outbox) is generic: a row is one thing to hand to someone outside (kind
-- 'webhook': one event for one endpoint; a later kind: one SMS), claimed like jobs
-- (FOR UPDATE SKIP LOCKED, a lease token, every write guarded by it) and fair across a key (the
-- endpoint): at most N rows of one key are running at once across the fleet, and every key's
-- oldest due row comes before any key's second. Kind-specific effects (attempt log, endpoint
-- health) live in the kind's own functions, which call the generic ones.
--
-- Events keep being written where the state changes (sql/0002, 0003, 0005, 0006: R-PRV-4;
-- push_app.encryption_disabled by sql/0006's push_app_update); triggers here fan each one out to
-- the endpoints that want it in the same transaction, delete it when none does, and record
-- push_notification.finished. Triggers, not restated functions: every path that writes an event
-- or ends a notification is covered, including functions restated later.

-- MARK: events

-- Events recorded before this release had no consumer and never will (no endpoint existed):
-- not kept. The table is emptied before the column is added, so adding it rewrites nothing.
DELETE FROM push_events;
-- The body's `id` (pevt_ + hex, R-API-4 style), distinct from the internal sequence.
ALTER TABLE push_events ADD COLUMN public_id uuid NOT NULL DEFAULT gen_random_uuid();
CREATE UNIQUE INDEX push_events_public_id_key ON push_events (public_id);

-- R-MODE-1: the mode an event belongs to. Device and notification events carry theirs;
-- credential and app-policy events are live (credentials serve live mode only, R-APP-3; changing
-- require_encryption is a live credential's change in the API).
CREATE FUNCTION push_event_mode(p_payload jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(p_payload ->> 'mode', 'live')
$$;

-- MARK: endpoints

-- Shape bounds of an endpoint's event types, at the SQL boundary too; which types exist is PushCore's
-- WebhookEventType, checked before the row is written.
CREATE FUNCTION push_webhook_types_ok(p_types text[]) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT cardinality(p_types) BETWEEN 1 AND 16
       AND NOT EXISTS (SELECT 1 FROM unnest(p_types) t
                        WHERE t IS NULL OR char_length(t) > 64 OR t !~ '^[a-z_]+\.[a-z_]+$')
$$;

CREATE TABLE push_webhook_endpoints (
    id                          uuid PRIMARY KEY,          -- made by the caller: the secrets' aad names it
    app_id                      uuid NOT NULL REFERENCES push_apps (id) ON DELETE CASCADE,
    mode                        text NOT NULL CHECK (mode IN ('test', 'live')),
    url                         text NOT NULL CHECK (octet_length(url) BETWEEN 1 AND 2048),
    event_types                 text[] NOT NULL CHECK (push_webhook_types_ok(event_types)),
    enabled                     boolean NOT NULL DEFAULT true,
    disabled_reason             text CHECK (disabled_reason IN ('MANUAL', 'ENDPOINT_GONE', 'FAILING')),
    disabled_at                 timestamptz,
    -- Signing secrets, sealed (AES-256-GCM, SecretBox) under PUSHFLEET_CREDENTIALS_KEY like credential
    -- sets; the previous one keeps signing until previous_secret_expires_at (24 h after a rotation).
    secret_sealed               bytea NOT NULL,
    previous_secret_sealed      bytea,
    previous_secret_expires_at  timestamptz,
    -- R-HOOK-2: first failed attempt since the last success (NULL while the last attempt succeeded).
    failing_since               timestamptz,
    last_success_at             timestamptz,
    last_failure_at             timestamptz,
    created_at                  timestamptz NOT NULL DEFAULT now(),
    updated_at                  timestamptz NOT NULL DEFAULT now(),
    CHECK (enabled = (disabled_at IS NULL)),
    CHECK (enabled = (disabled_reason IS NULL)),
    CHECK ((previous_secret_sealed IS NULL) = (previous_secret_expires_at IS NULL))
);
-- Fan-out of an event (push_events_fan_out) and listing.
CREATE INDEX push_webhook_endpoints_app_idx ON push_webhook_endpoints (app_id, mode);

-- MARK: the outbox (generic)

CREATE TABLE push_outbox (
    id                 bigserial PRIMARY KEY,
    kind               text NOT NULL CHECK (kind IN ('webhook')),
    fair_key           uuid NOT NULL,             -- unit of fairness and concurrency (webhook: the endpoint)
    ref_id             bigint NOT NULL,           -- what to hand over (webhook: push_events.id)
    -- available -> running -> done | failed | available (retry); done | failed -> available (resend).
    state              text NOT NULL DEFAULT 'available' CHECK (state IN ('available', 'running', 'done', 'failed')),
    run_at             timestamptz NOT NULL DEFAULT now(),
    attempts           int NOT NULL DEFAULT 0,    -- claims, ever
    failures           int NOT NULL DEFAULT 0,    -- failed attempts in the current window (backoff)
    window_started_at  timestamptz,               -- first attempt of the current window (set at claim)
    lease_owner        text,
    lease_token        uuid,
    lease_expires_at   timestamptz,
    last_error         text,
    created_at         timestamptz NOT NULL DEFAULT now(),
    finished_at        timestamptz,
    CHECK ((state IN ('done', 'failed')) = (finished_at IS NOT NULL)),
    CHECK ((state = 'running') = (lease_token IS NOT NULL AND lease_expires_at IS NOT NULL)),
    UNIQUE (kind, ref_id, fair_key)                -- one row per (event, endpoint); lookups by event
);
-- Every change of state writes a new row version into each index (state is in the partial
-- indexes' predicates, so no update is HOT): the indexes are kept to these four.
-- The claim: keys with available rows (skip scan) and each key's due rows in run_at order.
CREATE INDEX push_outbox_due_idx ON push_outbox (kind, fair_key, run_at, id) WHERE state = 'available';
-- The claim's per-key running count; lease rescue (running rows are few: what is in flight).
CREATE INDEX push_outbox_running_idx ON push_outbox (kind, fair_key) WHERE state = 'running';

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

-- MARK: webhook deliveries

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


-- The attempt log (`pushfleet webhooks attempts`): one row per recorded attempt, deleted with its
-- outbox row (retention, endpoint deletion).
CREATE TABLE push_webhook_attempts (
    outbox_id     bigint NOT NULL REFERENCES push_outbox (id) ON DELETE CASCADE,
    attempt       int NOT NULL,
    endpoint_id   uuid NOT NULL,
    event_id      bigint NOT NULL,
    attempted_at  timestamptz NOT NULL,
    result        text NOT NULL CHECK (result IN ('delivered', 'retry', 'failed')),
    status_code   int,                                   -- HTTP status; NULL when no answer
    error         text CHECK (error IS NULL OR char_length(error) <= 500),
    duration_ms   int,
    response      text CHECK (response IS NULL OR char_length(response) <= 256),  -- the answer's first bytes
    PRIMARY KEY (outbox_id, attempt)
);
-- By endpoint (`webhooks attempts --endpoint/--app`); by event through push_outbox (kind, ref_id)
-- and this table's primary key.
CREATE INDEX push_webhook_attempts_endpoint_idx ON push_webhook_attempts (endpoint_id, attempted_at DESC);

-- Events whose every webhook row is final get delivered_at (the retention clock, MaintenanceStore);
-- an event left with no row at all (its endpoints were deleted) is deleted. Primary key of
-- push_events, push_outbox (kind, ref_id, fair_key).
CREATE FUNCTION push_webhook_finish_events(p_event_ids bigint[], p_now timestamptz DEFAULT now())
RETURNS void
LANGUAGE sql AS $$
    -- sql/LOCK_ORDER.md: the events, by id, before any write.
    SELECT 1 FROM push_events WHERE id = ANY (p_event_ids) ORDER BY id FOR UPDATE;
    WITH ids AS (SELECT DISTINCT e FROM unnest(p_event_ids) AS e), gone AS (
        DELETE FROM push_events ev USING ids
         WHERE ev.id = ids.e
           AND NOT EXISTS (SELECT 1 FROM push_outbox o WHERE o.kind = 'webhook' AND o.ref_id = ev.id)
        RETURNING ev.id
    )
    UPDATE push_events ev SET delivered_at = p_now
      FROM ids
     WHERE ev.id = ids.e AND ev.delivered_at IS NULL AND ev.id NOT IN (SELECT id FROM gone)
       AND NOT EXISTS (SELECT 1 FROM push_outbox o
                        WHERE o.kind = 'webhook' AND o.ref_id = ev.id AND o.finished_at IS NULL);
$$;

-- The available rows of endpoints that no longer take events fail ('ENDPOINT_DISABLED') and their
-- events are finished (push_outbox_due_idx). Returns the rows failed.
CREATE FUNCTION push_webhook_fail_pending(p_endpoints uuid[], p_now timestamptz DEFAULT now())
RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
    v_events bigint[];
BEGIN
    PERFORM 1 FROM push_webhook_endpoints WHERE id = ANY (p_endpoints) ORDER BY id FOR UPDATE;
    WITH failed AS (
        UPDATE push_outbox o SET state = 'failed', last_error = 'ENDPOINT_DISABLED', finished_at = p_now
         WHERE o.kind = 'webhook' AND o.state = 'available' AND o.fair_key = ANY (p_endpoints)
        RETURNING o.ref_id
    )
    SELECT array_agg(ref_id) INTO v_events FROM failed;
    IF v_events IS NULL THEN
        RETURN 0;
    END IF;
    PERFORM push_webhook_finish_events(v_events, p_now);
    RETURN cardinality(v_events);
END
$$;

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

-- MARK: fan-out and push_notification.finished

-- R-HOOK-1, R-PRV-4: in the transaction that records an event, one outbox row per enabled
-- endpoint of its app and mode subscribed to its type (push_webhook_endpoints_app_idx); an event no
-- endpoint wants is deleted at once (issue 19: not kept). A row trigger: the statements that
-- insert events run on hot paths (push_record_batch) and mostly insert none.
CREATE FUNCTION push_events_fan_out() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO push_outbox (kind, fair_key, ref_id, run_at, created_at)
    SELECT 'webhook', ep.id, NEW.id, NEW.created_at, NEW.created_at
      FROM push_webhook_endpoints ep
     WHERE ep.app_id = NEW.app_id AND ep.mode = push_event_mode(NEW.payload) AND ep.enabled
       AND NEW.type = ANY (ep.event_types);
    IF FOUND THEN
        PERFORM pg_notify('pushfleet_webhooks', '');
    ELSE
        DELETE FROM push_events WHERE id = NEW.id;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER push_events_fan_out AFTER INSERT ON push_events
    FOR EACH ROW EXECUTE FUNCTION push_events_fan_out();

-- push_notification.finished (opt-in): when a notification becomes final, whatever path ended it
-- (push_finalize_notification, push_cancel). The WHEN clause is evaluated without calling the
-- function; the function writes the event only when an endpoint asked for this type.
CREATE FUNCTION push_notification_finished_event() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM push_webhook_endpoints ep
                WHERE ep.app_id = NEW.app_id AND ep.mode = NEW.mode AND ep.enabled
                  AND 'push_notification.finished' = ANY (ep.event_types)) THEN
        INSERT INTO push_events (app_id, type, payload)
        VALUES (NEW.app_id, 'push_notification.finished',
                jsonb_build_object('notification_id', NEW.id, 'mode', NEW.mode, 'status', NEW.status,
                                   'device_count', NEW.device_count, 'error_code', NEW.error_code));
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER push_notifications_finished AFTER UPDATE ON push_notifications
    FOR EACH ROW WHEN (OLD.finished_at IS NULL AND NEW.finished_at IS NOT NULL)
    EXECUTE FUNCTION push_notification_finished_event();

-- MARK: endpoint management (WebhookEndpointStore)

-- Creates an endpoint; at most p_max per app and mode (the app row is locked so that parallel
-- creations take turns). Raises NOT_FOUND for a missing or deleted app.
CREATE FUNCTION push_webhook_endpoint_create(p_id uuid, p_app_id uuid, p_mode text, p_url text,
                                             p_event_types text[], p_secret bytea, p_max int)
RETURNS SETOF push_webhook_endpoints
LANGUAGE plpgsql AS $$
DECLARE
    v_count int;
BEGIN
    PERFORM 1 FROM push_apps WHERE id = p_app_id AND deleted_at IS NULL FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'NOT_FOUND: push app % does not exist', p_app_id;
    END IF;
    SELECT count(*) INTO v_count FROM push_webhook_endpoints WHERE app_id = p_app_id AND mode = p_mode;
    IF v_count >= p_max THEN
        RAISE EXCEPTION 'VALIDATION_ERROR: the app already has % % webhook endpoints, the limit', v_count, p_mode;
    END IF;
    RETURN QUERY
    INSERT INTO push_webhook_endpoints (id, app_id, mode, url, event_types, secret_sealed)
    VALUES (p_id, p_app_id, p_mode, p_url, p_event_types, p_secret)
    RETURNING *;
END
$$;

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

-- Deletes an endpoint with its pending outbox rows (push_outbox_due_idx, push_outbox_running_idx;
-- an attempt in flight then records nothing); events left with no row are deleted, the others
-- finished when their remaining rows are. Its final rows and their attempt log go with their
-- events' retention. False for an unknown id.
CREATE FUNCTION push_webhook_endpoint_delete(p_id uuid, p_now timestamptz DEFAULT now())
RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    v_events bigint[];
BEGIN
    DELETE FROM push_webhook_endpoints WHERE id = p_id;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    WITH gone AS (DELETE FROM push_outbox WHERE kind = 'webhook' AND fair_key = p_id AND state IN ('available', 'running')
                  RETURNING ref_id)
    SELECT array_agg(ref_id) INTO v_events FROM gone;
    IF v_events IS NOT NULL THEN
        PERFORM push_webhook_finish_events(v_events, p_now);
    END IF;
    RETURN true;
END
$$;

-- `webhooks resend EVENT`: the event again, with the same webhook-id, to p_endpoint (any enabled
-- endpoint of the event's app and mode) or, when NULL, to every enabled endpoint whose row for it
-- is final. Rows still pending are left as they are. The retry window starts again. Returns the
-- rows queued. Raises NOT_FOUND (no such event: never recorded, or deleted after its retention,
-- or no such endpoint for it) and VALIDATION_ERROR (the endpoint is disabled).
CREATE FUNCTION push_webhook_resend(p_event uuid, p_endpoint uuid, p_now timestamptz DEFAULT now())
RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
    v_event push_events;
    v_enabled boolean;
    v_n int;
BEGIN
    SELECT * INTO v_event FROM push_events WHERE public_id = p_event FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'NOT_FOUND: no webhook event % (deleted after its retention, or never recorded)', p_event;
    END IF;
    IF p_endpoint IS NOT NULL THEN
        SELECT enabled INTO v_enabled FROM push_webhook_endpoints
         WHERE id = p_endpoint AND app_id = v_event.app_id AND mode = push_event_mode(v_event.payload);
        IF NOT FOUND THEN
            RAISE EXCEPTION 'NOT_FOUND: no webhook endpoint % for this event''s app and mode', p_endpoint;
        END IF;
        IF NOT v_enabled THEN
            RAISE EXCEPTION 'VALIDATION_ERROR: webhook endpoint % is disabled; enable it first', p_endpoint;
        END IF;
        INSERT INTO push_outbox AS o (kind, fair_key, ref_id, run_at)
        VALUES ('webhook', p_endpoint, v_event.id, p_now)
        ON CONFLICT (kind, ref_id, fair_key) DO UPDATE
           SET state = 'available', run_at = p_now, failures = 0, window_started_at = NULL, finished_at = NULL,
               last_error = NULL
         WHERE o.state IN ('done', 'failed');
    ELSE
        UPDATE push_outbox o
           SET state = 'available', run_at = p_now, failures = 0, window_started_at = NULL, finished_at = NULL,
               last_error = NULL
          FROM push_webhook_endpoints ep
         WHERE o.kind = 'webhook' AND o.ref_id = v_event.id AND o.state IN ('done', 'failed')
           AND ep.id = o.fair_key AND ep.enabled;
    END IF;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    IF v_n > 0 THEN
        UPDATE push_events SET delivered_at = NULL WHERE id = v_event.id;
        PERFORM pg_notify('pushfleet_webhooks', '');
    END IF;
    RETURN v_n;
END
$$;
