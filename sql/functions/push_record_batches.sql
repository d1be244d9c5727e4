-- The previous release's entry point: this release's worker calls push_start_notifications,
-- push_record and push_finalize_notifications instead (sql/0010). Kept, unchanged, for workers
-- below schema 10; dropped at the contract step.
--
-- push_record_batches, as in 0004, taking every lock of the call first, in the lock order: all its
-- jobs' notification rows (by id), all its job rows (by id), then push_lock_record_rows for every
-- record of the call. (0004 took them job after job, so two workers recording overlapping
-- notifications, or a worker's lease heartbeat and its own record, could deadlock.) The per-job
-- calls then find their rows already locked. Same signature and results.
CREATE OR REPLACE FUNCTION push_record_batches(
    p_job_ids bigint[], p_lease_tokens uuid[], p_job_counts int[],
    p_device_ids uuid[], p_statuses text[], p_error_codes text[], p_error_details text[],
    p_encrypted boolean[], p_providers text[], p_message_ids text[], p_attempts int[], p_failures int[],
    p_next_attempt_at timestamptz[], p_payloads bytea[], p_nets_charge boolean[],
    p_deactivate_reasons text[], p_verdict_at timestamptz[],
    p_invalid_job_index int[], p_invalid_credentials text[], p_invalid_reasons text[],
    p_accepted_job_index int[], p_accepted_credentials text[],
    p_now timestamptz DEFAULT now())
RETURNS TABLE (job_id bigint, remaining_batches int, deactivated int, endings text[], has_sms boolean)
LANGUAGE plpgsql AS $$
DECLARE
    i int;
    lo int;
    hi int := 0;
    a_device_ids uuid[]; a_statuses text[]; a_error_codes text[]; a_error_details text[]; a_encrypted boolean[];
    a_providers text[]; a_message_ids text[]; a_attempts int[]; a_failures int[]; a_next timestamptz[];
    a_payloads bytea[]; a_nets boolean[]; a_reasons text[]; a_verdicts timestamptz[];
    a_invalid text[]; a_invalid_reasons text[]; a_accepted text[];
BEGIN
    PERFORM 1 FROM push_notifications n
     WHERE n.id IN (SELECT j.notification_id FROM push_jobs j WHERE j.id = ANY (p_job_ids))
     ORDER BY n.id FOR UPDATE;
    PERFORM 1 FROM push_jobs j WHERE j.id = ANY (p_job_ids) ORDER BY j.id FOR UPDATE;
    PERFORM push_lock_record_rows(
        ARRAY(SELECT u.id FROM unnest(p_device_ids, p_deactivate_reasons) AS u(id, reason) WHERE u.reason IS NOT NULL),
        ARRAY(SELECT j.app_id FROM unnest(p_invalid_job_index) WITH ORDINALITY AS c(job, n)
                JOIN push_jobs j ON j.id = p_job_ids[c.job] ORDER BY c.n),
        coalesce(p_invalid_credentials, '{}'),
        ARRAY(SELECT j.app_id FROM unnest(p_accepted_job_index) WITH ORDINALITY AS c(job, n)
                JOIN push_jobs j ON j.id = p_job_ids[c.job] ORDER BY c.n),
        coalesce(p_accepted_credentials, '{}'));

    FOR i IN 1 .. coalesce(cardinality(p_job_ids), 0) LOOP
        lo := hi + 1;
        hi := hi + p_job_counts[i];
        a_device_ids := coalesce(p_device_ids[lo:hi], '{}'); a_statuses := coalesce(p_statuses[lo:hi], '{}');
        a_error_codes := coalesce(p_error_codes[lo:hi], '{}'); a_error_details := coalesce(p_error_details[lo:hi], '{}');
        a_encrypted := coalesce(p_encrypted[lo:hi], '{}'); a_providers := coalesce(p_providers[lo:hi], '{}');
        a_message_ids := coalesce(p_message_ids[lo:hi], '{}'); a_attempts := coalesce(p_attempts[lo:hi], '{}');
        a_failures := coalesce(p_failures[lo:hi], '{}'); a_next := coalesce(p_next_attempt_at[lo:hi], '{}');
        a_payloads := coalesce(p_payloads[lo:hi], '{}'); a_nets := coalesce(p_nets_charge[lo:hi], '{}');
        a_reasons := coalesce(p_deactivate_reasons[lo:hi], '{}'); a_verdicts := coalesce(p_verdict_at[lo:hi], '{}');
        SELECT coalesce(array_agg(c.kind ORDER BY c.n), '{}'), coalesce(array_agg(c.reason ORDER BY c.n), '{}')
          INTO a_invalid, a_invalid_reasons
          FROM unnest(p_invalid_job_index, p_invalid_credentials, p_invalid_reasons) WITH ORDINALITY AS c(job, kind, reason, n)
         WHERE c.job = i;
        SELECT coalesce(array_agg(c.kind ORDER BY c.n), '{}') INTO a_accepted
          FROM unnest(p_accepted_job_index, p_accepted_credentials) WITH ORDINALITY AS c(job, kind, n)
         WHERE c.job = i;
        RETURN QUERY
            SELECT p_job_ids[i], r.remaining_batches, r.deactivated, r.endings, r.has_sms
              FROM push_record_batch(p_job_ids[i], p_lease_tokens[i], a_device_ids, a_statuses, a_error_codes,
                                     a_error_details, a_encrypted, a_providers, a_message_ids, a_attempts, a_failures,
                                     a_next, a_payloads, a_nets, a_reasons, a_verdicts, a_invalid, a_invalid_reasons,
                                     a_accepted, p_now) AS r;
    END LOOP;
END
$$;
