-- push_split_audience (sql/0018, issue 22): one step of a whole-app audience's split, in the
-- caller's transaction, under the split job's lease. The audience is streamed from
-- push_devices_broadcast_idx (app_id, mode, id) WHERE active, by keyset pagination after the
-- notification's split_cursor: at most p_chunk devices per call (1 to 10,000), never the whole
-- audience in one array or one row. The devices taken are the app's active devices of the
-- notification's mode, of its platforms when it names some, created at or before its send time
-- (R-SEND-1 at the send time: a device registered after it is left out; one reactivated after it
-- is taken when the split reaches it, like a device that re-registered).
-- One step writes, together: the chunk's batch jobs (p_batch_size devices each), a charge for each
-- device the policy delivers to (R-KIND-5: a whole-app audience is charged at send time, batch by
-- batch as its batch jobs are created; the ledger's primary key keeps one charge per delivery),
-- the cursor moved past the chunk, and remaining_batches counting the new jobs. A worker killed
-- after the commit resumes after the cursor, one killed before it leaves nothing: no device is
-- split twice or skipped. Answers, one row:
--   'split': a full chunk was taken; the job is available again at once, its run_at kept (first
--     among its app's jobs; the claim's round robin across apps gives other apps' work its turn
--     between two steps).
--   'done': the chunk was the last (shorter than p_chunk); the split job itself became the last
--     batch job (its last group, or no device: an empty batch that lets the notification end), so
--     remaining_batches' count of the split (1, from push_start_notifications) moves to it.
--   'throttled': the notification already has p_max_pending batches or more unfinished; nothing
--     split, the job is available again p_wait_seconds later, behind the batches made before (a
--     big audience never fills the queue's claim window: other apps' notifications stay among the
--     oldest jobs due).
--   'not_sending': the notification is no longer sending or has no whole-app audience; the job
--     is completed (nothing else written). 'lease_lost', 'orphaned': nothing written.
-- Locks (sql/LOCK_ORDER.md): the notification row, then the job row; new rows are inserted only.
-- The policy predicate of the charges is push_enqueue's, push_policy_delivers (sql/0024: key
-- present, a platform whose transport encrypts itself per push_platforms, encryption not required,
-- or an ids_only app: R-IDS-1, sql/0019), on the `encrypted` and `content_mode` that
-- push_start_notifications read at the send time; the key's
-- presence is read as `kid IS NOT NULL` (equal by push_devices' CHECK), which the index carries, so
-- a step is an index-only scan of the app's slice of the index (the table's visibility map allowing).
CREATE FUNCTION push_split_audience(p_job_id bigint, p_lease_token uuid, p_chunk int, p_batch_size int,
                                    p_max_pending int, p_wait_seconds float8, p_now timestamptz DEFAULT now())
RETURNS TABLE (outcome text, batch_jobs int, devices int, charged int)
LANGUAGE plpgsql AS $$
DECLARE
    v_n push_notifications;
    v_job push_jobs;
    v_deleted boolean;
    v_ids uuid[];
    v_charge uuid[];
    v_count int;
    v_groups int;
    v_inserted int;
    v_charged int;
    v_done boolean;
BEGIN
    IF p_chunk IS NULL OR p_chunk NOT BETWEEN 1 AND 10000 OR p_batch_size IS NULL OR p_batch_size < 1
       OR p_max_pending IS NULL OR p_max_pending < 1 OR p_wait_seconds IS NULL OR p_wait_seconds < 0 THEN
        RAISE EXCEPTION 'VALIDATION_ERROR: p_chunk 1 to 10000, p_batch_size and p_max_pending at least 1, p_wait_seconds at least 0';
    END IF;
    SELECT n.* INTO v_n FROM push_notifications n
     WHERE n.id = (SELECT j.notification_id FROM push_jobs j WHERE j.id = p_job_id) FOR UPDATE;
    SELECT j.* INTO v_job FROM push_jobs j
     WHERE j.id = p_job_id AND j.lease_token = p_lease_token AND j.state = 'running' AND j.kind = 'split' FOR UPDATE;
    IF NOT FOUND THEN
        RETURN QUERY SELECT 'lease_lost'::text, 0, 0, 0;
        RETURN;
    END IF;
    IF v_n.id IS NULL THEN
        RETURN QUERY SELECT 'orphaned'::text, 0, 0, 0;
        RETURN;
    END IF;
    IF v_n.status <> 'sending' OR v_n.audience IS DISTINCT FROM 'all' THEN
        UPDATE push_jobs SET state = 'completed', finalized_at = p_now, lease_token = NULL, lease_expires_at = NULL,
                             lease_owner = NULL
         WHERE id = p_job_id;
        RETURN QUERY SELECT 'not_sending'::text, 0, 0, 0;
        RETURN;
    END IF;
    IF v_n.remaining_batches - 1 >= p_max_pending THEN
        UPDATE push_jobs SET state = 'available', run_at = p_now + make_interval(secs => p_wait_seconds), attempt = 0,
                             lease_token = NULL, lease_expires_at = NULL, lease_owner = NULL
         WHERE id = p_job_id;
        RETURN QUERY SELECT 'throttled'::text, 0, 0, 0;
        RETURN;
    END IF;
    SELECT a.deleted_at IS NOT NULL INTO v_deleted FROM push_apps a WHERE a.id = v_n.app_id;

    -- The chunk (push_devices_broadcast_idx, keyset after the cursor): at most p_chunk ids.
    SELECT coalesce(array_agg(c.id ORDER BY c.id), '{}'),
           coalesce(array_agg(c.id ORDER BY c.id) FILTER (WHERE push_policy_delivers(
               c.keyed, c.platform = ANY (ARRAY(SELECT s.platform FROM push_platforms s WHERE s.encrypts_itself)),
               v_n.encrypted, v_n.content_mode)), '{}')
      INTO v_ids, v_charge
      FROM (SELECT d.id, d.platform, d.kid IS NOT NULL AS keyed
              FROM push_devices d
             WHERE NOT coalesce(v_deleted, true) AND d.app_id = v_n.app_id AND d.mode = v_n.mode AND d.active
               AND (v_n.split_cursor IS NULL OR d.id > v_n.split_cursor)
               AND d.created_at <= v_n.started_at
               AND (v_n.audience_platforms IS NULL OR d.platform = ANY (v_n.audience_platforms))
             ORDER BY d.id
             LIMIT p_chunk) c;
    v_count := cardinality(v_ids);
    v_done := v_count < p_chunk;
    v_groups := (v_count + p_batch_size - 1) / p_batch_size;

    -- The chunk's batch jobs, but the last group of the last chunk, which the split job becomes.
    INSERT INTO push_jobs (kind, notification_id, app_id, device_ids, priority, run_at)
    SELECT 'batch', v_n.id, v_n.app_id, v_ids[g * p_batch_size + 1 : (g + 1) * p_batch_size], v_job.priority, p_now
      FROM generate_series(0, v_groups - 1 - CASE WHEN v_done THEN 1 ELSE 0 END) AS g;
    GET DIAGNOSTICS v_inserted = ROW_COUNT;

    -- Charges at send time (R-KIND-5), one per delivery at most (the ledger's primary key).
    INSERT INTO push_ledger (notification_id, device_id, kind, app_id, mode, reason)
    SELECT v_n.id, c.id, 'charge', v_n.app_id, v_n.mode, 'send_time'
      FROM unnest(v_charge) AS c(id)
    ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS v_charged = ROW_COUNT;

    UPDATE push_notifications
       SET split_cursor = CASE WHEN v_count > 0 THEN v_ids[v_count] ELSE split_cursor END,
           remaining_batches = remaining_batches + v_inserted
     WHERE id = v_n.id;
    IF v_done THEN
        UPDATE push_jobs
           SET kind = 'batch',
               device_ids = CASE WHEN v_groups > 0 THEN v_ids[(v_groups - 1) * p_batch_size + 1 : v_count] ELSE '{}' END,
               state = 'available', run_at = p_now, attempt = 0, lease_token = NULL, lease_expires_at = NULL,
               lease_owner = NULL
         WHERE id = p_job_id;
    ELSE
        -- Its run_at kept: the split job stays its app's first job in the claim's order (ahead of
        -- the batches it made), while the claim's round robin gives other apps their turn.
        UPDATE push_jobs SET state = 'available', attempt = 0, lease_token = NULL, lease_expires_at = NULL,
                             lease_owner = NULL
         WHERE id = p_job_id;
    END IF;
    PERFORM pg_notify('pushfleet_jobs', '');
    RETURN QUERY SELECT CASE WHEN v_done THEN 'done' ELSE 'split' END::text,
                        v_inserted + CASE WHEN v_done THEN 1 ELSE 0 END, v_count, v_charged;
END
$$;
