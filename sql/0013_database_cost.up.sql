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
-- claim, a heartbeat: no final state entered or left). One call per statement, whatever its rows.
CREATE FUNCTION push_job_tally_add() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO push_job_tally AS t (backend_pid, state, jobs)
        SELECT pg_backend_pid(), n.state, count(*) FROM new_jobs n
         WHERE n.state IN ('completed', 'discarded', 'cancelled') GROUP BY n.state
        ON CONFLICT (backend_pid, state) DO UPDATE SET jobs = t.jobs + excluded.jobs;
    ELSIF TG_OP = 'DELETE' THEN
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
    REFERENCING NEW TABLE AS new_jobs FOR EACH STATEMENT EXECUTE FUNCTION push_job_tally_add();
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
