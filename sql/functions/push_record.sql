-- push_record: everything a claim's batches produced, in one round trip and the caller's
-- transaction. p_batch is one JSON value (written by PGQueueStore's RecordJSON):
--   {"jobs": [{"job_id": 1, "lease_token": "...", "records": 2}, ...],
--    "deliveries": [push_delivery_record, ...],      -- job after job, "records" of each
--    "credentials": [push_credential_change, ...]}
-- For each job whose lease still holds: its delivery rows (final, or 'retrying'; a final row is
-- never overwritten, R-SEND-8), the ledger row each record names (`ledger`: 'charge', 'refund' or
-- 'none', decided by PushCore's LedgerRule; at most one of each kind per device, R-SEND-9), the
-- deactivation verdicts applied only when not older than the device's last registration
-- (R-DEV-8) with their push_device.deactivated events (R-PRV-4), credential sets marked invalid
-- (push_app.credentials_invalid, R-PRV-2/3) or accepted (R-APP-3), one successor batch job for
-- the devices still retrying (at their earliest next attempt), and the job's completion. A job
-- whose lease was lost writes nothing and answers outcome 'lease_lost'; the others still record.
-- When a notification's last batch is recorded, the answer carries every delivery's ending
-- (ending_codes: 'sent' or the error code; ending_nets: whether its ledger rows net one charge)
-- for PushCore's final decision, which push_finalize_notifications then stores.
-- A job whose notification row is missing answers 'orphaned' and writes nothing.
-- Locks (sql/LOCK_ORDER.md): every job's notification row (by id), every job row (by id), then
-- push_lock_record_rows for the whole call (devices a verdict may deactivate, their count rows,
-- the credential rows about to change), before any write.
-- Set-based (sql/0013, issue 17): the records are read once, and one statement writes every
-- held job's deliveries, ledger rows, verdicts, events, successor jobs, completions and
-- notification counters, whatever the number of jobs; credential changes (rare) take two more,
-- and the endings one: no statement runs per job or per device. Records are matched to their job
-- by their job_id. Two jobs of one notification in one call both answer the notification's
-- remaining batches after the call. A device recorded twice for one notification in one call
-- (never made by the worker) keeps one record: a final one if any. A notification whose last
-- batch this was keeps its row unwritten (remaining_batches as before the call): the caller's
-- push_finalize_notifications, in the same transaction, sets it to 0 with the final status.
-- A job may carry its notification's final state as PushCore decided it (sql/0023, issue 17:
-- "final_status", "final_error_code", "final_device_count"), which the worker gives only when the
-- job's records are every delivery its notification will have (a sole batch it started in this
-- claim, nothing gone, nothing retrying). When this call records that notification's last batch
-- (and it is not final already), the same statement stores that state, with its SMS queued for
-- 'sms_fallback', exactly as push_finalize_notifications would: no endings are answered for it
-- (ending_codes and ending_nets NULL) and no finalization follows. The state is never decided
-- here; without these keys (the previous release's worker) nothing changes.
CREATE OR REPLACE FUNCTION push_record(p_batch json, p_now timestamptz DEFAULT now())
RETURNS TABLE (job_id bigint, outcome text, remaining_batches int, deactivated int, ending_codes text[],
               ending_nets boolean[], has_sms boolean)
-- Generic plans (sql/0025, issue 17): a custom plan costed its statements with the job ids' values
-- against statistics taken while the tables were small (or every job available) and read
-- push_jobs / push_notifications by sequential scan, a cost growing with the rows kept; the generic
-- plan reads them by primary key whatever the statistics say.
SET plan_cache_mode = force_generic_plan
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
    v_res_finalized boolean[];
    v_final_statuses text[];
    v_final_codes text[];
    v_final_counts int[];
BEGIN
    v_all := ARRAY(SELECT r FROM json_populate_recordset(NULL::push_delivery_record,
                                                         coalesce(p_batch -> 'deliveries', '[]')) r);
    v_changes := ARRAY(SELECT c FROM json_populate_recordset(NULL::push_credential_change,
                                                             coalesce(p_batch -> 'credentials', '[]')) c);
    -- The jobs list parsed once (json_to_recordset), not once per element and member.
    SELECT coalesce(array_agg(x.job_id ORDER BY x.o), '{}'), coalesce(array_agg(x.lease_token ORDER BY x.o), '{}'),
           coalesce(array_agg(x.final_status ORDER BY x.o), '{}'), coalesce(array_agg(x.final_error_code ORDER BY x.o), '{}'),
           coalesce(array_agg(x.final_device_count ORDER BY x.o), '{}')
      INTO v_ids, v_tokens, v_final_statuses, v_final_codes, v_final_counts
      FROM ROWS FROM (json_to_recordset(coalesce(p_batch -> 'jobs', '[]'))
                      AS (job_id bigint, lease_token uuid, final_status text, final_error_code text, final_device_count int))
           WITH ORDINALITY AS x(job_id, lease_token, final_status, final_error_code, final_device_count, o);
    IF EXISTS (SELECT 1 FROM unnest(v_final_statuses) f WHERE f NOT IN ('sent', 'sms_fallback', 'failed')) THEN
        RAISE EXCEPTION 'VALIDATION_ERROR: a final status is sent, sms_fallback or failed';
    END IF;
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
    -- those whose lease holds but whose notification row is missing. The jobs are read by primary
    -- key (j.id = ANY) and the lease checked on the rows read: with `state = 'running'` as a
    -- condition of the scan, the planner read every running job (push_jobs_lease_idx) once per
    -- job of the call (measured: 32,640 comparisons for a claim of 128 beside another worker's).
    SELECT coalesce(array_agg(j.id) FILTER (WHERE j.held AND n.id IS NOT NULL), '{}'),
           coalesce(array_agg(j.id) FILTER (WHERE j.held AND n.id IS NULL), '{}')
      INTO v_held, v_orphaned
      FROM (SELECT j.id, j.notification_id, j.lease_token = x.token AND j.state = 'running' AS held
              FROM push_jobs j JOIN unnest(v_ids, v_tokens) AS x(id, token) ON x.id = j.id
             WHERE j.id = ANY (v_ids)) j
      LEFT JOIN push_notifications n ON n.id = j.notification_id;

    -- One statement: every part reads the same records (r) and the same snapshot.
    WITH jobs AS (
        SELECT j.id, j.priority, n.id AS notification_id, n.app_id, n.mode, n.remaining_batches,
               n.finished_at IS NOT NULL AS finished, f.status AS final_status, f.code AS final_code,
               f.device_count AS final_count
          FROM push_jobs j JOIN push_notifications n ON n.id = j.notification_id
          LEFT JOIN unnest(v_ids, v_final_statuses, v_final_codes, v_final_counts) AS f(id, status, code, device_count)
            ON f.id = j.id
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
    ), remaining AS (
        -- A job without retries was its notification's batch; a retrying one hands it on. (The
        -- rows are locked above: the count read here is the one an UPDATE would decrement.)
        -- A final state given (by the notification's one job of the call) is stored when this is
        -- its last batch and it is not final yet (sql/0023).
        SELECT m.*, m.remaining_batches = 0 AND NOT m.finished AND m.final_status IS NOT NULL AS finalize
          FROM (SELECT jb.notification_id AS id,
                       greatest(min(jb.remaining_batches) - count(*), 0)::int AS remaining_batches,
                       bool_or(jb.finished) AS finished,
                       CASE WHEN count(*) = 1 THEN min(jb.final_status) END AS final_status,
                       min(jb.final_code) AS final_code, min(jb.final_count) AS final_count
                  FROM jobs jb WHERE NOT EXISTS (SELECT 1 FROM retrying t WHERE t.job_id = jb.id)
                 GROUP BY jb.notification_id) m
    ), counters AS (
        -- The counter of a notification whose last batch this was is left to
        -- push_finalize_notifications, which the caller runs next in this transaction for it and
        -- which sets it to 0 with the final status: the row is written once, not twice. With its
        -- final state given, it is written here, once, with that state.
        UPDATE push_notifications n
           SET remaining_batches = m.remaining_batches,
               status = CASE WHEN m.finalize THEN m.final_status ELSE n.status END,
               error_code = CASE WHEN m.finalize THEN m.final_code ELSE n.error_code END,
               finished_at = CASE WHEN m.finalize THEN p_now ELSE n.finished_at END,
               device_count = CASE WHEN m.finalize THEN m.final_count ELSE n.device_count END
          FROM remaining m
         WHERE n.id = m.id AND (m.remaining_batches > 0 OR m.finished OR m.finalize)
        RETURNING n.id, n.app_id, n.sms_phone, n.sms_text, m.finalize AND m.final_status = 'sms_fallback' AS sms
    ), sms AS (
        -- 'sms_fallback' queues the SMS once (as push_finalize_notifications does).
        INSERT INTO push_sms_outbox (notification_id, app_id, phone, text)
        SELECT c.id, c.app_id, c.sms_phone, c.sms_text FROM counters c WHERE c.sms AND c.sms_phone IS NOT NULL
        ON CONFLICT (notification_id) DO NOTHING
        RETURNING 1
    ), writes AS (
        SELECT (SELECT count(*) FROM delivered) + (SELECT count(*) FROM ledgered) + (SELECT count(*) FROM counted)
             + (SELECT count(*) FROM successors) + (SELECT count(*) FROM completed) + (SELECT count(*) FROM counters)
             + (SELECT count(*) FROM sms) AS n
    )
    SELECT coalesce(array_agg(jb.id), '{}'), coalesce(array_agg(jb.notification_id), '{}'),
           coalesce(array_agg(coalesce(m.remaining_batches, jb.remaining_batches)), '{}'),
           coalesce(array_agg((SELECT count(*) FROM off o WHERE o.job_id = jb.id)::int), '{}'),
           coalesce(array_agg(coalesce(m.finalize, false)), '{}')
      INTO v_res_ids, v_res_notifications, v_res_remaining, v_res_deactivated, v_res_finalized
      FROM jobs jb LEFT JOIN remaining m ON m.id = jb.notification_id CROSS JOIN writes;

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
    -- notification's primary-key prefix), unless its final state was given and stored above.
    RETURN QUERY
    SELECT x.id,
           CASE WHEN h.pos IS NOT NULL THEN 'recorded' WHEN x.id = ANY (v_orphaned) THEN 'orphaned' ELSE 'lease_lost' END,
           v_res_remaining[h.pos], v_res_deactivated[h.pos],
           CASE WHEN v_res_remaining[h.pos] = 0 AND NOT v_res_finalized[h.pos] THEN e.codes END,
           CASE WHEN v_res_remaining[h.pos] = 0 AND NOT v_res_finalized[h.pos] THEN e.nets END,
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
           WHERE d.notification_id = n.id AND v_res_remaining[h.pos] = 0 AND NOT v_res_finalized[h.pos]) e ON true
     ORDER BY x.ord;
END
$$;
