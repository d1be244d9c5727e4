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
