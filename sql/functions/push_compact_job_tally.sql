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
