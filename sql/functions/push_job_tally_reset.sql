-- push_job_tally_reset: TRUNCATE push_jobs empties the tally (in the same transaction).
CREATE FUNCTION push_job_tally_reset() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM push_job_tally;
    RETURN NULL;
END
$$;
