-- The database's cost per notification (issue 17). Expand-then-contract: every function and view
-- keeps its name, signature and columns, so a worker of the previous release keeps working.

-- MARK: - Queue statistics without a full scan (part 5)

-- push_job_tally: how many jobs are in each final state (completed, discarded, cancelled), kept
-- by the statement triggers below on every write to push_jobs, whoever makes it (this release, the
-- previous one, an operator's UPDATE, retention, a cascade from push_notifications, TRUNCATE).
-- Each backend adds its changes to its own rows (backend_pid): two sessions never wait on one
-- tally row, so the hot path gains no lock and no deadlock; the sum over all rows is the count.
-- A row's jobs may be negative (a session that deletes jobs others completed). Rows of sessions
-- that ended are folded into backend_pid 0 by push_compact_job_tally (the Maintainer, each run), so
-- the table holds about one row per state and live session. Bypassed only where triggers are
-- (session_replication_role = replica, ALTER TABLE ... DISABLE TRIGGER): push_recount_job_tally
-- repairs it then.
CREATE TABLE push_job_tally (
    backend_pid  int NOT NULL,
    state        text NOT NULL CHECK (state IN ('completed', 'discarded', 'cancelled')),
    jobs         bigint NOT NULL,
    PRIMARY KEY (backend_pid, state)
);

-- push_job_tally_add: one statement's changes, from its transition tables (old_jobs and/or
-- new_jobs, by TG_OP), added to this session's rows; nothing written when they cancel out (a
-- claim, a heartbeat: no final state entered or left). One call per UPDATE or DELETE statement,
-- whatever its rows.
CREATE FUNCTION push_job_tally_add() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        INSERT INTO push_job_tally AS t (backend_pid, state, jobs)
        SELECT pg_backend_pid(), o.state, -count(*) FROM old_jobs o
         WHERE o.state IN ('completed', 'discarded', 'cancelled') GROUP BY o.state
        ON CONFLICT (backend_pid, state) DO UPDATE SET jobs = t.jobs + excluded.jobs;
    ELSE
        INSERT INTO push_job_tally AS t (backend_pid, state, jobs)
        SELECT pg_backend_pid(), d.state, sum(d.n) FROM (
                SELECT n.state, 1 AS n FROM new_jobs n WHERE n.state IN ('completed', 'discarded', 'cancelled')
                UNION ALL
                SELECT o.state, -1 FROM old_jobs o WHERE o.state IN ('completed', 'discarded', 'cancelled')) d
         GROUP BY d.state HAVING sum(d.n) <> 0
        ON CONFLICT (backend_pid, state) DO UPDATE SET jobs = t.jobs + excluded.jobs;
    END IF;
    RETURN NULL;
END
$$;

-- push_job_tally_insert_row: one job inserted in a final state (an operator's or a restore's
-- INSERT: the queue inserts available jobs, which the trigger's WHEN skips without a call, so
-- enqueue pays nothing for the tally).
CREATE FUNCTION push_job_tally_insert_row() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO push_job_tally AS t (backend_pid, state, jobs) VALUES (pg_backend_pid(), NEW.state, 1)
    ON CONFLICT (backend_pid, state) DO UPDATE SET jobs = t.jobs + 1;
    RETURN NULL;
END
$$;

-- push_job_tally_reset: TRUNCATE push_jobs empties the tally (in the same transaction).
CREATE FUNCTION push_job_tally_reset() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM push_job_tally;
    RETURN NULL;
END
$$;

-- push_recount_job_tally: the tally recounted from push_jobs (a full scan), with writers held off
-- meanwhile (SHARE lock until the caller's transaction ends). For this migration, and for an
-- operator after writes that bypassed the triggers (a restore with session_replication_role =
-- replica). Returns the jobs counted.
CREATE FUNCTION push_recount_job_tally() RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_total bigint;
BEGIN
    LOCK TABLE push_jobs IN SHARE MODE;
    DELETE FROM push_job_tally;
    INSERT INTO push_job_tally (backend_pid, state, jobs)
    SELECT 0, j.state, count(*) FROM push_jobs j WHERE j.state IN ('completed', 'discarded', 'cancelled') GROUP BY j.state;
    SELECT coalesce(sum(t.jobs), 0) INTO v_total FROM push_job_tally t;
    RETURN v_total;
END
$$;

-- CREATE TRIGGER locks push_jobs (SHARE ROW EXCLUSIVE) until this migration commits, so no write
-- falls between the triggers and the count.
CREATE TRIGGER push_jobs_tally_insert AFTER INSERT ON push_jobs
    FOR EACH ROW WHEN (NEW.state IN ('completed', 'discarded', 'cancelled')) EXECUTE FUNCTION push_job_tally_insert_row();
CREATE TRIGGER push_jobs_tally_update AFTER UPDATE ON push_jobs
    REFERENCING OLD TABLE AS old_jobs NEW TABLE AS new_jobs FOR EACH STATEMENT EXECUTE FUNCTION push_job_tally_add();
CREATE TRIGGER push_jobs_tally_delete AFTER DELETE ON push_jobs
    REFERENCING OLD TABLE AS old_jobs FOR EACH STATEMENT EXECUTE FUNCTION push_job_tally_add();
CREATE TRIGGER push_jobs_tally_truncate AFTER TRUNCATE ON push_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION push_job_tally_reset();
SELECT push_recount_job_tally();

-- push_compact_job_tally: folds the rows of sessions that ended into backend_pid 0, in one
-- statement (a session that starts meanwhile under a recycled pid only waits for it, or adds a
-- new row after it). Returns the rows folded. Run by the Maintainer.
CREATE FUNCTION push_compact_job_tally() RETURNS int
LANGUAGE sql AS $$
    WITH gone AS (
        DELETE FROM push_job_tally t
         WHERE t.backend_pid <> 0 AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = t.backend_pid)
        RETURNING t.state, t.jobs
    ), folded AS (
        -- A data-modifying WITH runs whether or not it is read.
        INSERT INTO push_job_tally AS t (backend_pid, state, jobs)
        SELECT 0, g.state, sum(g.jobs) FROM gone g GROUP BY g.state
        ON CONFLICT (backend_pid, state) DO UPDATE SET jobs = t.jobs + excluded.jobs
        RETURNING 1
    )
    SELECT count(*)::int FROM gone
$$;

-- push_queue_stats, as in 0006 (same columns), at a cost in proportion to the jobs available and
-- running rather than to every job kept: available, due and the oldest due job read the partial
-- index push_jobs_due_idx (state = 'available'), running reads push_jobs_lease_idx
-- (state = 'running'), and the final states come from push_job_tally. Polled by KEDA, `stats
-- --watch`, `--until-drained` and the worker's gauges; 0006's definition read the whole table
-- (every completed job of the retention period) on each poll.
CREATE OR REPLACE VIEW push_queue_stats AS
SELECT
    q.available,
    q.due,
    (SELECT count(*) FROM push_jobs j WHERE j.state = 'running')                        AS running,
    coalesce((SELECT sum(t.jobs) FROM push_job_tally t WHERE t.state = 'discarded'), 0)::bigint AS discarded,
    coalesce((SELECT sum(t.jobs) FROM push_job_tally t WHERE t.state = 'completed'), 0)::bigint AS completed,
    coalesce((SELECT sum(t.jobs) FROM push_job_tally t WHERE t.state = 'cancelled'), 0)::bigint AS cancelled,
    q.oldest_due_age_seconds
FROM (SELECT count(*) AS available,
             count(*) FILTER (WHERE j.run_at <= now()) AS due,
             coalesce(extract(epoch FROM now() - min(j.run_at) FILTER (WHERE j.run_at <= now() AND isfinite(j.run_at))),
                      0)::float8 AS oldest_due_age_seconds
        FROM push_jobs j WHERE j.state = 'available') q;

-- MARK: - Set-based send time and record (part 3), enqueue's helpers (part 4)
--
-- push_start_notifications and push_record keep their signatures and answers (sql/0010) and run
-- a fixed number of statements per call instead of a PL/pgSQL loop of statements per job;
-- push_content_floor and push_expires_at are no longer parsed and planned again on every
-- push_enqueue.



-- push_start_notifications(bigint[],uuid[],int,text,timestamptz): the text of sql/functions/push_start_notifications.sql.
CREATE OR REPLACE FUNCTION push_start_notifications(p_job_ids bigint[], p_lease_tokens uuid[], p_batch_size int,
                                         p_gone_ledger text, p_now timestamptz DEFAULT now())
RETURNS TABLE (job_id bigint, outcome text, status text, inline_device_ids uuid[], batch_jobs int, gone int,
               encrypted boolean)
LANGUAGE plpgsql AS $$
BEGIN
    IF p_gone_ledger IS NULL OR p_gone_ledger NOT IN ('none', 'refund') THEN
        RAISE EXCEPTION 'VALIDATION_ERROR: p_gone_ledger must be none or refund (a gone device was charged)';
    END IF;
    IF coalesce(cardinality(p_job_ids), 0) <> coalesce(cardinality(p_lease_tokens), 0) THEN
        RAISE EXCEPTION 'VALIDATION_ERROR: one lease token per job';
    END IF;
    PERFORM 1 FROM push_notifications n
     WHERE n.id IN (SELECT j.notification_id FROM push_jobs j WHERE j.id = ANY (p_job_ids))
     ORDER BY n.id FOR UPDATE;
    PERFORM 1 FROM push_jobs j WHERE j.id = ANY (p_job_ids) ORDER BY j.id FOR UPDATE;
    RETURN QUERY
    WITH input AS (
        SELECT x.id, x.token, x.ord FROM unnest(p_job_ids, p_lease_tokens) WITH ORDINALITY AS x(id, token, ord)
    ), seen AS (
        -- Each job with its lease check, notification and app (primary keys).
        SELECT i.id, i.ord, j.id IS NOT NULL AS held, n.id AS notification_id, n.status AS n_status, n.app_id, n.mode,
               n.user_ids, n.device_ids, j.priority, coalesce(a.require_encryption, false) AS require_encryption,
               a.deleted_at IS NOT NULL AS app_deleted,
               row_number() OVER (PARTITION BY n.id ORDER BY i.ord) AS nth
          FROM input i
          LEFT JOIN push_jobs j ON j.id = i.id AND j.lease_token = i.token AND j.state = 'running'
          LEFT JOIN push_notifications n ON n.id = j.notification_id
          LEFT JOIN push_apps a ON a.id = n.app_id
    ), started AS (
        SELECT s.*, coalesce(t.targets, '{}') AS targets
          FROM seen s
          -- R-SEND-1 at send time: the audience (push_devices_audience_idx), one probe per user.
          LEFT JOIN LATERAL (SELECT array_agg(d.id ORDER BY d.id) AS targets FROM push_devices d
                              WHERE NOT s.app_deleted AND d.app_id = s.app_id AND d.mode = s.mode AND d.active
                                AND d.user_id = ANY (s.user_ids)
                                AND (s.device_ids IS NULL OR d.id = ANY (s.device_ids))) t ON true
         WHERE s.held AND s.notification_id IS NOT NULL AND s.n_status = 'pending' AND s.nth = 1
    ), gone_devices AS (
        SELECT s.notification_id, l.device_id FROM started s
          JOIN push_ledger l ON l.notification_id = s.notification_id AND l.kind = 'charge'
         WHERE NOT (l.device_id = ANY (s.targets))
    ), delivered AS (
        INSERT INTO push_deliveries (notification_id, device_id, status, error_code, error_detail, apns_id, finished_at)
        SELECT g.notification_id, g.device_id, 'failed', 'DEVICE_GONE',
               'charged at acceptance, no longer targeted at send time', push_apns_id(g.notification_id, g.device_id), p_now
          FROM gone_devices g
        ON CONFLICT DO NOTHING
        RETURNING notification_id, device_id
    ), ledgered AS (
        INSERT INTO push_ledger (notification_id, device_id, kind, app_id, mode, reason)
        SELECT d.notification_id, d.device_id, p_gone_ledger, s.app_id, s.mode, 'DEVICE_GONE'
          FROM delivered d JOIN started s ON s.notification_id = d.notification_id
         WHERE p_gone_ledger <> 'none'
        ON CONFLICT DO NOTHING
        RETURNING 1
    ), split AS (
        INSERT INTO push_jobs (kind, notification_id, app_id, device_ids, priority, run_at)
        SELECT 'batch', s.notification_id, s.app_id, s.targets[g * p_batch_size + 1 : (g + 1) * p_batch_size],
               s.priority, p_now
          FROM started s, generate_series(0, (cardinality(s.targets) - 1) / p_batch_size) AS g
         WHERE cardinality(s.targets) > p_batch_size
        RETURNING notification_id
    ), jobs_done AS (
        -- A small audience makes this job its batch; a large one's job is complete once split.
        UPDATE push_jobs j
           SET kind = CASE WHEN cardinality(s.targets) > p_batch_size THEN j.kind ELSE 'batch' END,
               device_ids = CASE WHEN cardinality(s.targets) > p_batch_size THEN j.device_ids ELSE s.targets END,
               state = CASE WHEN cardinality(s.targets) > p_batch_size THEN 'completed' ELSE j.state END,
               finalized_at = CASE WHEN cardinality(s.targets) > p_batch_size THEN p_now ELSE j.finalized_at END,
               lease_token = CASE WHEN cardinality(s.targets) > p_batch_size THEN NULL ELSE j.lease_token END,
               lease_expires_at = CASE WHEN cardinality(s.targets) > p_batch_size THEN NULL ELSE j.lease_expires_at END,
               lease_owner = CASE WHEN cardinality(s.targets) > p_batch_size THEN NULL ELSE j.lease_owner END
          FROM started s WHERE j.id = s.id
        RETURNING j.id
    ), notified AS (
        -- Batch jobs any worker can claim: wake the fleet once.
        SELECT pg_notify('pushfleet_jobs', '') FROM (SELECT 1 FROM split LIMIT 1) x
    ), marked AS (
        UPDATE push_notifications n
           SET status = 'sending', encrypted = s.require_encryption, started_at = p_now,
               remaining_batches = CASE WHEN cardinality(s.targets) = 0 THEN 0
                                        ELSE (cardinality(s.targets) - 1) / p_batch_size + 1 END
          FROM started s WHERE n.id = s.notification_id
        RETURNING n.id
    ), counts AS (
        SELECT (SELECT count(*) FROM jobs_done) + (SELECT count(*) FROM marked) + (SELECT count(*) FROM ledgered)
             + (SELECT count(*) FROM notified) AS writes
    )
    SELECT s.id,
           CASE WHEN NOT s.held THEN 'lease_lost' WHEN s.notification_id IS NULL THEN 'orphaned'
                WHEN st.id IS NULL THEN 'not_pending' ELSE 'started' END,
           CASE WHEN NOT s.held OR s.notification_id IS NULL THEN NULL WHEN st.id IS NULL THEN
                CASE WHEN s.n_status = 'pending' THEN 'sending' ELSE s.n_status END ELSE 'sending' END,
           CASE WHEN st.id IS NOT NULL AND cardinality(st.targets) <= p_batch_size THEN st.targets END,
           CASE WHEN st.id IS NULL THEN NULL WHEN cardinality(st.targets) = 0 THEN 0
                ELSE (cardinality(st.targets) - 1) / p_batch_size + 1 END::int,
           CASE WHEN st.id IS NOT NULL THEN
                (SELECT count(*) FROM delivered d WHERE d.notification_id = st.notification_id)::int END,
           CASE WHEN st.id IS NOT NULL THEN st.require_encryption END
      FROM seen s
      LEFT JOIN started st ON st.id = s.id
      CROSS JOIN counts
     ORDER BY s.ord;
END
$$;

-- push_record(json,timestamptz): the text of sql/functions/push_record.sql.
CREATE OR REPLACE FUNCTION push_record(p_batch json, p_now timestamptz DEFAULT now())
RETURNS TABLE (job_id bigint, outcome text, remaining_batches int, deactivated int, ending_codes text[],
               ending_nets boolean[], has_sms boolean)
LANGUAGE plpgsql AS $$
DECLARE
    v_all push_delivery_record[];
    v_changes push_credential_change[];
    v_ids bigint[];
    v_tokens uuid[];
    v_held bigint[];
    v_off_ids uuid[];
    v_orphaned bigint[];
    v_res_ids bigint[];
    v_res_notifications uuid[];
    v_res_remaining int[];
    v_res_deactivated int[];
BEGIN
    v_all := ARRAY(SELECT r FROM json_populate_recordset(NULL::push_delivery_record,
                                                         coalesce(p_batch -> 'deliveries', '[]')) r);
    v_changes := ARRAY(SELECT c FROM json_populate_recordset(NULL::push_credential_change,
                                                             coalesce(p_batch -> 'credentials', '[]')) c);
    SELECT coalesce(array_agg((e ->> 'job_id')::bigint ORDER BY o), '{}'),
           coalesce(array_agg((e ->> 'lease_token')::uuid ORDER BY o), '{}')
      INTO v_ids, v_tokens
      FROM json_array_elements(coalesce(p_batch -> 'jobs', '[]')) WITH ORDINALITY AS x(e, o);
    PERFORM 1 FROM push_notifications n
     WHERE n.id IN (SELECT j.notification_id FROM push_jobs j WHERE j.id = ANY (v_ids))
     ORDER BY n.id FOR UPDATE;
    PERFORM 1 FROM push_jobs j WHERE j.id = ANY (v_ids) ORDER BY j.id FOR UPDATE;
    v_off_ids := ARRAY(SELECT r.device_id FROM unnest(v_all) r WHERE r.deactivate_reason IS NOT NULL);
    PERFORM push_lock_record_rows(
        v_off_ids,
        ARRAY(SELECT j.app_id FROM unnest(v_changes) WITH ORDINALITY AS c(jid, kind, change, reason, n)
                JOIN push_jobs j ON j.id = c.jid WHERE c.change = 'invalid' ORDER BY c.n),
        ARRAY(SELECT c.kind FROM unnest(v_changes) WITH ORDINALITY AS c(jid, kind, change, reason, n)
               WHERE c.change = 'invalid' AND EXISTS (SELECT 1 FROM push_jobs j WHERE j.id = c.jid) ORDER BY c.n),
        ARRAY(SELECT j.app_id FROM unnest(v_changes) WITH ORDINALITY AS c(jid, kind, change, reason, n)
                JOIN push_jobs j ON j.id = c.jid WHERE c.change = 'accepted' ORDER BY c.n),
        ARRAY(SELECT c.kind FROM unnest(v_changes) WITH ORDINALITY AS c(jid, kind, change, reason, n)
               WHERE c.change = 'accepted' AND EXISTS (SELECT 1 FROM push_jobs j WHERE j.id = c.jid) ORDER BY c.n));

    -- The jobs that record: lease held, notification present (their rows are locked above); and
    -- those whose lease holds but whose notification row is missing.
    SELECT coalesce(array_agg(j.id) FILTER (WHERE n.id IS NOT NULL), '{}'),
           coalesce(array_agg(j.id) FILTER (WHERE n.id IS NULL), '{}')
      INTO v_held, v_orphaned
      FROM unnest(v_ids, v_tokens) AS x(id, token)
      JOIN push_jobs j ON j.id = x.id AND j.lease_token = x.token AND j.state = 'running'
      LEFT JOIN push_notifications n ON n.id = j.notification_id;

    -- One statement: every part reads the same records (r) and the same snapshot.
    WITH jobs AS (
        SELECT j.id, j.priority, n.id AS notification_id, n.app_id, n.mode, n.remaining_batches
          FROM push_jobs j JOIN push_notifications n ON n.id = j.notification_id
         WHERE j.id = ANY (v_held)
    ), r AS (
        SELECT DISTINCT ON (jb.notification_id, u.device_id)
               u.*, jb.notification_id, jb.app_id, jb.mode
          FROM unnest(v_all) WITH ORDINALITY AS u
          JOIN jobs jb ON jb.id = u.job_id
         ORDER BY jb.notification_id, u.device_id, u.status = 'retrying', u.ordinality
    ), delivered AS (
        INSERT INTO push_deliveries AS del (notification_id, device_id, status, error_code, error_detail, encrypted,
            provider, provider_message_id, apns_id, attempts, failures, next_attempt_at, payload, updated_at, finished_at)
        SELECT r.notification_id, r.device_id, r.status, r.error_code, left(r.error_detail, 500),
               coalesce(r.encrypted, false), r.provider, r.provider_message_id, push_apns_id(r.notification_id, r.device_id),
               r.attempts, coalesce(r.failures, 0), CASE WHEN r.status = 'retrying' THEN r.next_attempt_at END, r.payload,
               p_now, CASE WHEN r.status = 'retrying' THEN NULL ELSE p_now END
          FROM r
        ON CONFLICT (notification_id, device_id) DO UPDATE
           SET status = excluded.status, error_code = excluded.error_code, error_detail = excluded.error_detail,
               encrypted = excluded.encrypted, provider = excluded.provider,
               provider_message_id = excluded.provider_message_id, attempts = excluded.attempts,
               failures = excluded.failures, next_attempt_at = excluded.next_attempt_at,
               payload = excluded.payload, updated_at = excluded.updated_at, finished_at = excluded.finished_at
         WHERE del.status = 'retrying'
        RETURNING 1
    ), ledgered AS (
        -- R-SEND-9, as LedgerRule decided: the missing charge, or the refund of the acceptance charge.
        INSERT INTO push_ledger (notification_id, device_id, kind, app_id, mode, reason)
        SELECT r.notification_id, r.device_id, r.ledger, r.app_id, r.mode, coalesce(r.error_code, 'sent')
          FROM r WHERE r.ledger IN ('charge', 'refund')
        ON CONFLICT DO NOTHING
        RETURNING 1
    ), off AS (
        -- R-PRV-1/2 with R-DEV-8 ordering: a verdict older than the last registration is ignored.
        -- The devices are probed by id (v_off_ids, the primary key), never joined by a scan.
        UPDATE push_devices d
           SET active = false, deactivated_at = p_now, deactivation_reason = r.deactivate_reason
          FROM r
         WHERE d.id = ANY (v_off_ids) AND r.deactivate_reason IS NOT NULL AND d.id = r.device_id AND d.active
           AND d.last_registered_at < coalesce(r.verdict_at, p_now)
        RETURNING d.id, d.app_id, d.mode, d.user_id, d.deactivation_reason, r.notification_id, r.job_id
    ), counted AS (
        UPDATE push_device_counts c SET active_count = greatest(c.active_count - o.n, 0)
          FROM (SELECT off.app_id, off.mode, count(*) AS n FROM off GROUP BY off.app_id, off.mode) o
         WHERE c.app_id = o.app_id AND c.mode = o.mode
        RETURNING 1
    ), events AS (
        -- R-PRV-4: the event is written by the transaction that makes the change.
        INSERT INTO push_events (app_id, type, payload)
        SELECT off.app_id, 'push_device.deactivated',
               jsonb_build_object('device_id', off.id, 'user_id', off.user_id, 'mode', off.mode,
                                  'reason', off.deactivation_reason, 'notification_id', off.notification_id)
          FROM off
        RETURNING 1
    ), retrying AS (
        SELECT r.job_id, min(r.next_attempt_at) AS run_at, array_agg(r.device_id ORDER BY r.device_id) AS device_ids
          FROM r WHERE r.status = 'retrying'
         GROUP BY r.job_id
    ), successors AS (
        -- One batch job per job for its devices still retrying, at their earliest next attempt.
        INSERT INTO push_jobs (kind, notification_id, app_id, device_ids, priority, run_at)
        SELECT 'batch', jb.notification_id, jb.app_id, t.device_ids, jb.priority, t.run_at
          FROM retrying t JOIN jobs jb ON jb.id = t.job_id
        RETURNING 1
    ), completed AS (
        UPDATE push_jobs j SET state = 'completed', finalized_at = p_now, lease_token = NULL,
                               lease_expires_at = NULL, lease_owner = NULL
         WHERE j.id = ANY (v_held)
        RETURNING j.id
    ), counters AS (
        -- A job without retries was its notification's batch; a retrying one hands it on.
        UPDATE push_notifications n SET remaining_batches = greatest(n.remaining_batches - k.done, 0)
          FROM (SELECT jb.notification_id, count(*) AS done FROM jobs jb
                 WHERE NOT EXISTS (SELECT 1 FROM retrying t WHERE t.job_id = jb.id)
                 GROUP BY jb.notification_id) k
         WHERE n.id = k.notification_id
        RETURNING n.id, n.remaining_batches
    ), writes AS (
        SELECT (SELECT count(*) FROM delivered) + (SELECT count(*) FROM ledgered) + (SELECT count(*) FROM counted)
             + (SELECT count(*) FROM successors) + (SELECT count(*) FROM completed) AS n
    )
    SELECT coalesce(array_agg(jb.id), '{}'), coalesce(array_agg(jb.notification_id), '{}'),
           coalesce(array_agg(coalesce(c.remaining_batches, jb.remaining_batches)), '{}'),
           coalesce(array_agg((SELECT count(*) FROM off o WHERE o.job_id = jb.id)::int), '{}')
      INTO v_res_ids, v_res_notifications, v_res_remaining, v_res_deactivated
      FROM jobs jb LEFT JOIN counters c ON c.id = jb.notification_id CROSS JOIN writes;

    IF cardinality(v_changes) > 0 THEN
        -- Credential sets (R-PRV-2/3, R-APP-3) of the jobs that record, each (app, kind) once.
        WITH x AS (
            SELECT DISTINCT ON (j.app_id, c.kind) j.app_id, c.kind, c.change, c.reason
              FROM unnest(v_changes) WITH ORDINALITY AS c(jid, kind, change, reason, n)
              JOIN push_jobs j ON j.id = c.jid
             WHERE c.jid = ANY (v_held) AND c.change = 'invalid'
             ORDER BY j.app_id, c.kind, c.n
        ), bad AS (
            UPDATE push_credentials c SET state = 'invalid', invalid_reason = x.reason, updated_at = p_now
              FROM x WHERE c.app_id = x.app_id AND c.kind = x.kind AND c.state <> 'invalid'
            RETURNING c.app_id, c.kind, c.invalid_reason
        )
        INSERT INTO push_events (app_id, type, payload)
        SELECT bad.app_id, 'push_app.credentials_invalid', jsonb_build_object('kind', bad.kind, 'reason', bad.invalid_reason)
          FROM bad;
        UPDATE push_credentials c
           SET state = CASE WHEN c.state = 'unverified' THEN 'verified' ELSE c.state END,
               first_accepted_at = coalesce(c.first_accepted_at, p_now), updated_at = p_now
         WHERE (c.app_id, c.kind) IN (SELECT j.app_id, x.kind FROM unnest(v_changes) x JOIN push_jobs j ON j.id = x.job_id
                                       WHERE x.job_id = ANY (v_held) AND x.change = 'accepted')
           AND (c.first_accepted_at IS NULL OR c.state = 'unverified');
    END IF;

    -- One answer per job, in the order given; a notification whose last batch this was answers
    -- every delivery's ending with its net from the ledger (one pass over each side by the
    -- notification's primary-key prefix).
    RETURN QUERY
    SELECT x.id,
           CASE WHEN h.pos IS NOT NULL THEN 'recorded' WHEN x.id = ANY (v_orphaned) THEN 'orphaned' ELSE 'lease_lost' END,
           v_res_remaining[h.pos], v_res_deactivated[h.pos],
           CASE WHEN v_res_remaining[h.pos] = 0 THEN e.codes END, CASE WHEN v_res_remaining[h.pos] = 0 THEN e.nets END,
           CASE WHEN h.pos IS NOT NULL THEN n.sms_phone IS NOT NULL END
      FROM unnest(v_ids) WITH ORDINALITY AS x(id, ord)
      CROSS JOIN LATERAL (SELECT array_position(v_res_ids, x.id) AS pos) h
      LEFT JOIN push_notifications n ON n.id = v_res_notifications[h.pos]
      LEFT JOIN LATERAL (
          SELECT coalesce(array_agg(CASE WHEN d.status = 'sent' THEN 'sent' ELSE d.error_code END ORDER BY d.device_id), '{}') AS codes,
                 coalesce(array_agg(coalesce(l.nets, false) ORDER BY d.device_id), '{}') AS nets
            FROM push_deliveries d
            LEFT JOIN (SELECT g.device_id, bool_or(g.kind = 'charge') AND NOT bool_or(g.kind = 'refund') AS nets
                         FROM push_ledger g WHERE g.notification_id = n.id GROUP BY g.device_id) l
              ON l.device_id = d.device_id
           WHERE d.notification_id = n.id AND v_res_remaining[h.pos] = 0) e ON true
     ORDER BY x.ord;
END
$$;

-- push_content_floor(text,text,json): the text of sql/functions/push_content_floor.sql.
CREATE OR REPLACE FUNCTION push_content_floor(p_title text, p_body text, p_data json) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
    IF p_data IS NULL THEN
        RETURN coalesce(octet_length(p_title), 0)::bigint + coalesce(octet_length(p_body), 0);
    END IF;
    RETURN coalesce(octet_length(p_title), 0)::bigint + coalesce(octet_length(p_body), 0)
         + coalesce((SELECT sum(octet_length(e.key) + CASE json_typeof(e.value)
                                WHEN 'string' THEN octet_length(e.value #>> '{}')
                                ELSE octet_length(regexp_replace(regexp_replace(e.value::text,
                                         '\\u[0-9a-fA-F]{4}|\\.', '.', 'g'), '[[:space:]]', '', 'g'))
                              END)
                       FROM json_each(p_data) e), 0);
END
$$;

-- push_expires_at(timestamptz,timestamptz,int): the text of sql/functions/push_expires_at.sql.
CREATE OR REPLACE FUNCTION push_expires_at(p_accepted timestamptz, p_send_at timestamptz, p_ttl int) RETURNS timestamptz
LANGUAGE sql STABLE AS $$
    SELECT greatest(p_accepted, coalesce(p_send_at, p_accepted)) + make_interval(secs => p_ttl)
$$;
