-- Grouped batch recording: one round trip records every job of a claim (many small notifications
-- cost a constant number of round trips per claim, not per notification). Expand-only: the
-- per-job functions of 0002 stay, and a worker of the previous release keeps using them.

-- push_record_batches: push_record_batch for each job of p_job_ids, in order, in the caller's
-- transaction. Per-record arrays are flattened across jobs; p_job_index (1-based, into p_job_ids)
-- says which job each record belongs to; credential changes likewise (p_invalid_job_index,
-- p_accepted_job_index). Any error (LEASE_LOST of one job) fails the whole call: the caller then
-- records job by job.
CREATE FUNCTION push_record_batches(
    p_job_ids bigint[], p_lease_tokens uuid[], p_job_index int[],
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
    a_device_ids uuid[]; a_statuses text[]; a_error_codes text[]; a_error_details text[]; a_encrypted boolean[];
    a_providers text[]; a_message_ids text[]; a_attempts int[]; a_failures int[]; a_next timestamptz[];
    a_payloads bytea[]; a_nets boolean[]; a_reasons text[]; a_verdicts timestamptz[];
    a_invalid text[]; a_invalid_reasons text[]; a_accepted text[];
BEGIN
    FOR i IN 1 .. coalesce(cardinality(p_job_ids), 0) LOOP
        SELECT coalesce(array_agg(x.device_id ORDER BY x.n), '{}'), coalesce(array_agg(x.status ORDER BY x.n), '{}'),
               coalesce(array_agg(x.error_code ORDER BY x.n), '{}'), coalesce(array_agg(x.error_detail ORDER BY x.n), '{}'),
               coalesce(array_agg(x.encrypted ORDER BY x.n), '{}'), coalesce(array_agg(x.provider ORDER BY x.n), '{}'),
               coalesce(array_agg(x.message_id ORDER BY x.n), '{}'), coalesce(array_agg(x.attempts ORDER BY x.n), '{}'),
               coalesce(array_agg(x.failures ORDER BY x.n), '{}'), coalesce(array_agg(x.next_attempt_at ORDER BY x.n), '{}'),
               coalesce(array_agg(x.payload ORDER BY x.n), '{}'), coalesce(array_agg(x.nets_charge ORDER BY x.n), '{}'),
               coalesce(array_agg(x.deactivate_reason ORDER BY x.n), '{}'), coalesce(array_agg(x.verdict_at ORDER BY x.n), '{}')
          INTO a_device_ids, a_statuses, a_error_codes, a_error_details, a_encrypted, a_providers, a_message_ids,
               a_attempts, a_failures, a_next, a_payloads, a_nets, a_reasons, a_verdicts
          FROM unnest(p_job_index, p_device_ids, p_statuses, p_error_codes, p_error_details, p_encrypted, p_providers,
                      p_message_ids, p_attempts, p_failures, p_next_attempt_at, p_payloads, p_nets_charge,
                      p_deactivate_reasons, p_verdict_at) WITH ORDINALITY
               AS x(job, device_id, status, error_code, error_detail, encrypted, provider, message_id, attempts, failures,
                    next_attempt_at, payload, nets_charge, deactivate_reason, verdict_at, n)
         WHERE x.job = i;
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
