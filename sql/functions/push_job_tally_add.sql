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
