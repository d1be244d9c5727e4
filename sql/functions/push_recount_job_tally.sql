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
