-- push_start_notifications: the send time of several notification jobs (R-SEND-2), each under its
-- own lease, one answer per job, in the order given. Per job (p_job_ids[i], p_lease_tokens[i]):
--   outcome 'lease_lost' when the lease no longer holds (nothing written for that job);
--   outcome 'not_pending' (with the notification's status) when it already started or ended;
--   outcome 'started': require_encryption read once and written as the notification's
--   `encrypted`, and the app's content_mode as its `content_mode` (R-IDS-1, sql/0019), both
--   answered; the audience resolved (R-SEND-1); charged devices no longer targeted get a
--   DEVICE_GONE delivery row and the ledger row p_gone_ledger names ('refund', or 'none'), which
--   is PushCore's LedgerRule for a charged DEVICE_GONE, passed by the worker: this function decides
--   who is gone (in the transaction that resolves the audience, R-SEND-2) and writes what it is
--   told; then either this job becomes the single batch (audience <= p_batch_size, returned as
--   inline_device_ids) or the audience is split into batch jobs any worker can claim.
-- A job whose notification row is missing answers 'orphaned' (the worker sets it aside).
-- Locks (sql/LOCK_ORDER.md): every job's notification row (by id), then every job row (by id),
-- before any write.
-- Set-based (sql/0013, issue 17): after the two locking reads, one statement starts every job of
-- the call (audiences, DEVICE_GONE rows, batch jobs, job and notification updates), whatever their
-- number: no statement runs per job. Two jobs of one notification (never made by push_enqueue):
-- the first in the call starts it, the others answer 'not_pending' with status 'sending'.
-- A whole-app audience (sql/0018, issue 22: audience 'all') is not resolved here: its notification
-- starts (status, `encrypted`, started_at) with remaining_batches 1 (the split still to come), and
-- its job becomes a 'split' job, available at once, that push_split_audience advances chunk by
-- chunk (answered 'started' with no inline devices and no batch jobs, like a split audience).
CREATE OR REPLACE FUNCTION push_start_notifications(p_job_ids bigint[], p_lease_tokens uuid[], p_batch_size int,
                                         p_gone_ledger text, p_now timestamptz DEFAULT now())
RETURNS TABLE (job_id bigint, outcome text, status text, inline_device_ids uuid[], batch_jobs int, gone int,
               encrypted boolean, content_mode text)
-- Generic plans (sql/0025, issue 17): a custom plan costed its statements with the job ids' values
-- against statistics taken while the tables were small (or every job available) and read
-- push_jobs / push_notifications by sequential scan, a cost growing with the rows kept; the generic
-- plan reads them by primary key whatever the statistics say.
SET plan_cache_mode = force_generic_plan
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
        -- Each job with its lease check, notification and app (primary keys). The job is read by
        -- primary key (j.id = ANY) and its lease checked on the row read: as a condition of the
        -- scan, `state = 'running'` had the planner read every running job (push_jobs_lease_idx)
        -- once per job of the call.
        SELECT i.id, i.ord, coalesce(j.lease_token = i.token AND j.state = 'running', false) AS held,
               n.id AS notification_id, n.status AS n_status, n.app_id, n.mode,
               n.user_ids, n.device_ids, n.audience IS NOT NULL AS broadcast, j.priority,
               coalesce(a.require_encryption, false) AS require_encryption,
               coalesce(a.content_mode, 'sealed') AS content_mode,
               a.deleted_at IS NOT NULL AS app_deleted,
               row_number() OVER (PARTITION BY n.id ORDER BY i.ord) AS nth
          FROM input i
          LEFT JOIN push_jobs j ON j.id = i.id AND j.id = ANY (p_job_ids)
          LEFT JOIN push_notifications n ON j.lease_token = i.token AND j.state = 'running' AND n.id = j.notification_id
          LEFT JOIN push_apps a ON a.id = n.app_id
    ), started AS (
        SELECT s.*, coalesce(t.targets, '{}') AS targets
          FROM seen s
          -- R-SEND-1 at send time: the audience (push_devices_audience_idx), one probe per user.
          LEFT JOIN LATERAL (SELECT array_agg(d.id ORDER BY d.id) AS targets FROM push_devices d
                              WHERE NOT s.app_deleted AND NOT s.broadcast AND d.app_id = s.app_id AND d.mode = s.mode AND d.active
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
        -- A small audience makes this job its batch; a large one's job is complete once split; a
        -- whole-app audience's job becomes its split job, given back to the queue at once.
        UPDATE push_jobs j
           SET kind = CASE WHEN s.broadcast THEN 'split' WHEN cardinality(s.targets) > p_batch_size THEN j.kind
                           ELSE 'batch' END,
               device_ids = CASE WHEN s.broadcast THEN '{}' WHEN cardinality(s.targets) > p_batch_size THEN j.device_ids
                                 ELSE s.targets END,
               state = CASE WHEN s.broadcast THEN 'available' WHEN cardinality(s.targets) > p_batch_size THEN 'completed'
                            ELSE j.state END,
               run_at = CASE WHEN s.broadcast THEN p_now ELSE j.run_at END,
               attempt = CASE WHEN s.broadcast THEN 0 ELSE j.attempt END,
               finalized_at = CASE WHEN s.broadcast THEN NULL WHEN cardinality(s.targets) > p_batch_size THEN p_now
                                   ELSE j.finalized_at END,
               lease_token = CASE WHEN s.broadcast OR cardinality(s.targets) > p_batch_size THEN NULL ELSE j.lease_token END,
               lease_expires_at = CASE WHEN s.broadcast OR cardinality(s.targets) > p_batch_size THEN NULL
                                       ELSE j.lease_expires_at END,
               lease_owner = CASE WHEN s.broadcast OR cardinality(s.targets) > p_batch_size THEN NULL ELSE j.lease_owner END
          FROM started s WHERE j.id = s.id
        RETURNING j.id
    ), notified AS (
        -- Batch jobs any worker can claim: wake the fleet once.
        SELECT pg_notify('pushfleet_jobs', '')
          FROM (SELECT 1 FROM split UNION ALL SELECT 1 FROM started WHERE broadcast LIMIT 1) x
    ), marked AS (
        UPDATE push_notifications n
           SET status = 'sending', encrypted = s.require_encryption, content_mode = s.content_mode, started_at = p_now,
               remaining_batches = CASE WHEN s.broadcast THEN 1 WHEN cardinality(s.targets) = 0 THEN 0
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
           CASE WHEN st.id IS NOT NULL AND NOT st.broadcast AND cardinality(st.targets) <= p_batch_size THEN st.targets END,
           CASE WHEN st.id IS NULL THEN NULL WHEN cardinality(st.targets) = 0 THEN 0
                ELSE (cardinality(st.targets) - 1) / p_batch_size + 1 END::int,
           CASE WHEN st.id IS NOT NULL THEN
                (SELECT count(*) FROM delivered d WHERE d.notification_id = st.notification_id)::int END,
           CASE WHEN st.id IS NOT NULL THEN st.require_encryption END,
           CASE WHEN st.id IS NOT NULL THEN st.content_mode END
      FROM seen s
      LEFT JOIN started st ON st.id = s.id
      CROSS JOIN counts
     ORDER BY s.ord;
END
$$;
