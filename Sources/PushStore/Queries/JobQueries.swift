/// SQL of the queue, in one place. Every statement is parameterized; "now" is an optional
/// parameter falling back to the server's `now()` so tests can pin the clock.
/// Indexes: `push_jobs_due_idx` (claim), `push_jobs_lease_idx` (heartbeat-less rescue),
/// primary keys elsewhere.
enum JobQueries {
    /// Claims up to `$2` due jobs for owner `$3` with a lease of `$4` seconds, round-robin across
    /// apps: among the oldest `$5` due jobs (a bounded window read from `push_jobs_due_idx`), each
    /// app's first job comes before any app's second, priority ordering work within an app.
    /// Rows another worker holds are skipped (`FOR UPDATE SKIP LOCKED`); never more than `$2` rows.
    /// Two device budgets keep a claim short (a batch job weighs its devices, a notification job
    /// one): each app's jobs are taken while the app's devices before them stay under `$7`, and the
    /// claim's jobs while all devices before them stay under `$6`, at least one job either way.
    /// Within a turn smaller jobs come first, so one app's broadcast batch never pushes another
    /// app's single notification out of the claim (issue 4, fairness).
    /// Returns each job with its notification's content and its app's send-time policy, or with
    /// `problem` (`ORPHANED_JOB: ...`, `OVERSIZED_ROW: ...`) and no content when it can never run.
    static let claimBatch = """
    WITH window_jobs AS (
        SELECT id, app_id, priority, run_at, coalesce(cardinality(device_ids), 1) AS weight FROM push_jobs
         WHERE state = 'available' AND run_at <= coalesce($1::timestamptz, now())
         ORDER BY priority DESC, run_at, id
         LIMIT $5::int
    ), ranked AS (
        SELECT id, priority, run_at, weight,
               row_number() OVER w AS turn,
               sum(weight) OVER w - weight AS app_devices_before
          FROM window_jobs
        WINDOW w AS (PARTITION BY app_id ORDER BY priority DESC, run_at, id)
    ), budgeted AS (
        -- Soft device budgets (at least one job): per app ($7), so one app's broadcast gives a claim
        -- one batch; per claim ($6), so a claim stays short when many apps have large batches due.
        SELECT id, priority, run_at, turn, weight FROM (
            SELECT id, priority, run_at, turn, weight,
                   sum(weight) OVER (ORDER BY turn, weight, priority DESC, run_at, id) - weight AS devices_before
              FROM ranked
             WHERE app_devices_before < $7::int) b
         WHERE devices_before < $6::int
    ), picked AS (
        -- Each window job locked by primary key, one probe in the claim's order (turn, weight,
        -- priority, run_at, id), until $2 are held: a row another claim holds is skipped without
        -- using up the limit. (A join of push_jobs to the window, costed with statistics taken
        -- while the table was small, was a hash join over a sequential scan of push_jobs.)
        SELECT l.id FROM (SELECT id FROM budgeted ORDER BY turn, weight, priority DESC, run_at, id) r
          CROSS JOIN LATERAL (SELECT j.id FROM push_jobs j WHERE j.id = r.id AND j.state = 'available'
                                 FOR UPDATE SKIP LOCKED) l
         LIMIT $2::int
    ), claimed AS (
        -- The held rows by primary key (`id = ANY`), never joined by a scan.
        UPDATE push_jobs j
           SET state = 'running', attempt = j.attempt + 1, lease_owner = $3::text,
               lease_token = gen_random_uuid(),
               lease_expires_at = coalesce($1::timestamptz, now()) + make_interval(secs => $4::float8)
         WHERE j.id = ANY (ARRAY(SELECT id FROM picked))
        RETURNING j.id, j.kind, j.notification_id, j.device_ids, j.lease_token, j.attempt, j.max_attempts, j.priority
    )
    SELECT c.id, c.kind, c.notification_id, c.device_ids, c.lease_token, c.attempt, c.max_attempts, x.problem,
           n.app_id, n.mode, n.status,
           CASE WHEN x.problem IS NULL THEN n.title END AS title, CASE WHEN x.problem IS NULL THEN n.body END AS body,
           CASE WHEN x.problem IS NULL THEN n.data END AS data, n.badge,
           CASE WHEN x.problem IS NULL THEN n.sound END AS sound, CASE WHEN x.problem IS NULL THEN n.thread_id END AS thread_id,
           CASE WHEN x.problem IS NULL THEN n.collapse_key END AS collapse_key,
           n.priority, n.ttl_seconds, n.accepted_at, n.send_at, n.expires_at, n.encrypted, n.content_mode,
           n.sms_phone IS NOT NULL AS has_sms,
           a.require_encryption, CASE WHEN x.problem IS NULL THEN a.placeholder_title END AS placeholder_title,
           CASE WHEN x.problem IS NULL THEN a.placeholder_body END AS placeholder_body, a.deleted_at IS NOT NULL AS app_deleted,
           \(claimKindColumns)
      FROM claimed c
      -- Outer joins: a job whose notification or app row is missing (foreign keys bypassed, as by a
      -- partial restore) is answered with its problem and set aside at once, not dropped here and
      -- rescued again and again. A row with a text over 65,536 bytes (written past push_enqueue,
      -- whose bounds are far lower) is set aside without loading it.
      -- Each row by primary key (LIMIT 1 keeps it a probe per job whatever the statistics say).
      LEFT JOIN LATERAL (SELECT * FROM push_notifications x WHERE x.id = c.notification_id LIMIT 1) n ON true
      LEFT JOIN LATERAL (SELECT * FROM push_apps x WHERE x.id = n.app_id LIMIT 1) a ON true
      CROSS JOIN LATERAL (SELECT CASE
          WHEN n.id IS NULL THEN 'ORPHANED_JOB: the job''s notification row is missing'
          WHEN a.id IS NULL THEN 'ORPHANED_JOB: the notification''s app row is missing'
          WHEN greatest(octet_length(n.title), octet_length(n.body), octet_length(n.data), octet_length(n.sound),
                        octet_length(n.thread_id), octet_length(n.collapse_key), octet_length(a.placeholder_title),
                        octet_length(a.placeholder_body), \(kindTextLengths)) > 65536
            THEN 'OVERSIZED_ROW: a stored text of the notification or its app is over 65536 bytes'
          END AS problem) x
     ORDER BY c.priority DESC, c.id
    """

    /// The NOTIFY channel of new work (`push_enqueue`, the split of an audience into batches).
    static let channel = "pushfleet_jobs"

    /// The claim's kind columns (sql/0011, R-KIND-1..3), the texts only for a row without a problem,
    /// the loc args as JSON array text. Read by `KindColumns`.
    static let claimKindColumns = """
    n.relevance_score, n.critical_sound_volume,
               CASE WHEN x.problem IS NULL THEN n.push_type END AS push_type,
               CASE WHEN x.problem IS NULL THEN n.interruption_level END AS interruption_level,
               CASE WHEN x.problem IS NULL THEN n.category END AS category,
               CASE WHEN x.problem IS NULL THEN n.target_content_id END AS target_content_id,
               CASE WHEN x.problem IS NULL THEN n.critical_sound_name END AS critical_sound_name,
               CASE WHEN x.problem IS NULL THEN n.title_loc_key END AS title_loc_key,
               CASE WHEN x.problem IS NULL THEN array_to_json(n.title_loc_args)::text END AS title_loc_args,
               CASE WHEN x.problem IS NULL THEN n.body_loc_key END AS body_loc_key,
               CASE WHEN x.problem IS NULL THEN array_to_json(n.body_loc_args)::text END AS body_loc_args,
               CASE WHEN x.problem IS NULL THEN n.channel_id END AS channel_id,
               CASE WHEN x.problem IS NULL THEN a.placeholder_title_loc_key END AS placeholder_title_loc_key,
               CASE WHEN x.problem IS NULL THEN a.placeholder_body_loc_key END AS placeholder_body_loc_key
    """

    /// The kind texts' lengths for the claim's OVERSIZED_ROW check.
    static let kindTextLengths = """
    octet_length(n.push_type), octet_length(n.interruption_level), octet_length(n.category), octet_length(n.target_content_id),
                            octet_length(n.critical_sound_name), octet_length(n.title_loc_key),
                            octet_length(n.title_loc_args::text), octet_length(n.body_loc_key),
                            octet_length(n.body_loc_args::text), octet_length(n.channel_id),
                            octet_length(a.placeholder_title_loc_key), octet_length(a.placeholder_body_loc_key)
    """

    /// The send-time step of several notification jobs in one round trip (`$1` job ids, `$2` lease
    /// tokens, `$3` batch size, `$4` the ledger row of a charged DEVICE_GONE), one answer per job
    /// (see sql/functions/push_start_notifications.sql).
    static let startNotifications = """
    SELECT job_id, outcome, status, inline_device_ids, batch_jobs, gone, encrypted, content_mode
      FROM push_start_notifications($1::bigint[], $2::uuid[], $3::int, $4::text, coalesce($5::timestamptz, now()))
    """

    /// One step of a whole-app audience's split (`$1` job, `$2` lease token, `$3` devices per step,
    /// `$4` batch size, `$5` unfinished batches that throttle it, `$6` the wait when throttled,
    /// seconds): sql/functions/push_split_audience.sql, keyset pagination over
    /// `push_devices_broadcast_idx (app_id, mode, id) WHERE active`.
    static let splitAudience = """
    SELECT outcome, batch_jobs, devices, charged
      FROM push_split_audience($1::bigint, $2::uuid, $3::int, $4::int, $5::int, $6::float8, coalesce($7::timestamptz, now()))
    """

    /// Devices of several batches (keys, targeting at send time, delivery progress, charge) in one
    /// round trip: `$1` batch index, `$2` notification id, `$3` device id, one element per device.
    /// `targeted` re-checks R-SEND-1 at send time for every device (a retry batch may run after the
    /// device moved, was deleted or deactivated). A device changes user only by registering, which
    /// moves `last_registered_at` to the clock; so the audience (`n.user_ids`, a linear scan: O(audience)
    /// per device) is searched only for devices registered since a minute before the notification
    /// started. Every other device still has the user `push_start_notification` picked it for from
    /// the audience. Without this, loading a 500-device batch of a 25,000-user broadcast compared
    /// 12.5 million user ids (about 0.4 s of server CPU per batch, measured). A whole-app audience
    /// (`n.audience`, issue 22) has no users: its devices are targeted while active, of its mode
    /// and of its platforms (`n.audience_platforms`). Primary keys of push_devices, push_deliveries and
    /// push_ledger.
    static let loadBatchDevices = """
    SELECT p.batch, p.id AS device_id, d.id IS NOT NULL AS found, d.platform, d.token, d.endpoint, d.p256dh,
           d.auth_secret, d.apns_environment, d.public_key, d.kid, d.last_registered_at,
           coalesce(d.app_id = n.app_id AND d.mode = n.mode AND d.active
                    AND (n.audience IS NOT NULL OR d.last_registered_at < n.started_at - interval '1 minute'
                         OR d.user_id = ANY (n.user_ids))
                    AND (n.audience_platforms IS NULL OR d.platform = ANY (n.audience_platforms))
                    AND (n.device_ids IS NULL OR d.id = ANY (n.device_ids)), false) AS targeted,
           del.status AS delivery_status, coalesce(del.attempts, 0) AS attempts,
           coalesce(del.failures, 0) AS failures, del.next_attempt_at,
           charge.found IS NOT NULL AS charged,
           push_apns_id(n.id, p.id) AS apns_id
      FROM unnest($1::int[], $2::uuid[], $3::uuid[]) WITH ORDINALITY AS p(batch, notification_id, id, ord)
      -- LIMIT 1 keeps each lookup a primary-key probe per device whatever the table statistics say
      -- (a hash join would read every notification, device, delivery or ledger row of the table for
      -- one batch).
      JOIN LATERAL (SELECT * FROM push_notifications x WHERE x.id = p.notification_id LIMIT 1) n ON true
      LEFT JOIN LATERAL (SELECT * FROM push_devices x WHERE x.id = p.id LIMIT 1) d ON true
      LEFT JOIN LATERAL (SELECT x.status, x.attempts, x.failures, x.next_attempt_at FROM push_deliveries x
                          WHERE x.notification_id = n.id AND x.device_id = p.id LIMIT 1) del ON true
      LEFT JOIN LATERAL (SELECT true AS found FROM push_ledger l
                          WHERE l.notification_id = n.id AND l.device_id = p.id AND l.kind = 'charge' LIMIT 1) charge ON true
     ORDER BY p.ord
    """

    /// Several batches recorded in one round trip: `$1` is `RecordJSON`'s value (see
    /// sql/functions/push_record.sql), one answer per job.
    static let record = """
    SELECT job_id, outcome, remaining_batches, deactivated, ending_codes, ending_nets, has_sms
      FROM push_record($1::json, coalesce($2::timestamptz, now()))
    """

    /// Notifications' final states as PushCore decided them (see
    /// sql/functions/push_finalize_notifications.sql), one element each.
    static let finalizeNotifications = """
    SELECT push_finalize_notifications($1::uuid[], $2::text[], $3::text[], $4::int[], coalesce($5::timestamptz, now()))
    """

    /// `held`: the running jobs of `$1` (ids) whose lease token is the matching element of `$2`,
    /// locked by id (sql/LOCK_ORDER.md), for the statements that change several leased jobs.
    static let heldJobs = """
    WITH held AS (
        SELECT j.id FROM push_jobs j
          JOIN unnest($1::bigint[], $2::uuid[]) AS h(id, token) ON j.id = h.id AND j.lease_token = h.token
         WHERE j.state = 'running'
         ORDER BY j.id
           FOR UPDATE OF j
    )
    """

    /// Extends the leases of the jobs this worker still holds, matched by (id, lease token). The rows
    /// are locked by id first (sql/LOCK_ORDER.md): updated in plan order, a heartbeat deadlocked with
    /// the same worker's grouped record (issue 13).
    static let heartbeat = """
    \(heldJobs)
    UPDATE push_jobs j SET lease_expires_at = now() + make_interval(secs => $3::float8)
      FROM held WHERE j.id = held.id
    RETURNING j.id
    """

    /// Puts back jobs whose lease expired (their worker died or hung), or sets them aside once out
    /// of attempts (poison jobs stay listable: `pushfleet jobs list --state discarded`).
    /// A row locked by someone (its record or heartbeat committing) is skipped, never waited for:
    /// the next rescue sees it if its lease is still expired then. `push_jobs_lease_idx`.
    static let rescueExpired = """
    WITH expired AS (
        SELECT id FROM push_jobs
         WHERE state = 'running' AND lease_expires_at < coalesce($1::timestamptz, now())
         ORDER BY id
           FOR UPDATE SKIP LOCKED
    )
    UPDATE push_jobs j
       SET state = CASE WHEN j.attempt >= j.max_attempts THEN 'discarded' ELSE 'available' END,
           finalized_at = CASE WHEN j.attempt >= j.max_attempts THEN now() END,
           run_at = now(), lease_token = NULL, lease_expires_at = NULL,
           last_error = 'LEASE_EXPIRED: lease of ' || coalesce(j.lease_owner, '?') || ' expired'
      FROM expired WHERE j.id = expired.id
    RETURNING j.id, j.state
    """

    /// A job whose processing failed (not a delivery: the job itself): retried at `$4`, or set aside
    /// once out of attempts. Guarded by the lease token.
    static let failJob = """
    UPDATE push_jobs
       SET state = CASE WHEN attempt >= max_attempts THEN 'discarded' ELSE 'available' END,
           finalized_at = CASE WHEN attempt >= max_attempts THEN now() END,
           run_at = $4::timestamptz, lease_token = NULL, lease_expires_at = NULL, lease_owner = NULL,
           last_error = left($3::text, 1000)
     WHERE id = $1::bigint AND lease_token = $2::uuid AND state = 'running'
    RETURNING state
    """

    /// Sets a job aside at once (`discarded`, with `$3` as its last error), guarded by its lease
    /// token `$2`: for a job that can never succeed, whatever its attempts left.
    static let discardJob = """
    UPDATE push_jobs
       SET state = 'discarded', finalized_at = now(), last_error = $3::text,
           lease_token = NULL, lease_expires_at = NULL, lease_owner = NULL
     WHERE id = $1::bigint AND lease_token = $2::uuid AND state = 'running'
    RETURNING state
    """

    /// Gives jobs back untouched (graceful shutdown, or a claim over its device budget): back to
    /// available now without spending an attempt; `$1` ids, `$2` their lease tokens; rows locked by
    /// id first (sql/LOCK_ORDER.md).
    static let releaseJobs = """
    \(heldJobs)
    UPDATE push_jobs j SET state = 'available', attempt = greatest(j.attempt - 1, 0), lease_token = NULL,
                           lease_expires_at = NULL, lease_owner = NULL
      FROM held WHERE j.id = held.id
    """

    /// The nearest future run_at (for sleeping until a scheduled notification is due), over finite
    /// times (a row run at 'infinity', written past push_enqueue, is never due).
    static let nextRunAt = """
    SELECT min(run_at) AS next FROM push_jobs WHERE state = 'available' AND isfinite(run_at)
    """

    /// Operators: list jobs by state (`push_jobs_due_idx` for available; others scan, bounded by `$2`).
    static let listJobs = """
    SELECT id, kind, notification_id, state, attempt, max_attempts, run_at, last_error,
           coalesce(cardinality(device_ids), 0) AS devices
      FROM push_jobs WHERE state = $1::text ORDER BY id DESC LIMIT $2::int
    """

    /// Operators: put a discarded (or cancelled-by-error) job back, with fresh attempts.
    static let retryJob = """
    UPDATE push_jobs SET state = 'available', run_at = now(), attempt = 0, finalized_at = NULL,
                         last_error = NULL
     WHERE id = $1::bigint AND state = 'discarded'
    RETURNING id
    """

    /// Queue depth by state, due now, oldest due age (the `push_queue_stats` view).
    static let stats = "SELECT * FROM push_queue_stats"

    /// Apps with `confirm_deliveries` (R-IDS-4), refreshed with the queue gauges: a scan of
    /// push_apps (one row per app, read every `statsInterval`, never on the send path).
    static let confirmingApps = """
    SELECT id, confirm_deliveries_since FROM push_apps
     WHERE confirm_deliveries AND confirm_deliveries_since IS NOT NULL AND deleted_at IS NULL ORDER BY id LIMIT $1::int
    """
}
