/// SQL of the fleet's maintenance (R-DEV-7 device cleanup, retention of jobs, deliveries, events
/// and content), in one place. Each statement handles at most `$2` rows, the oldest first, chosen
/// through a partial index (named on each) so a batch costs the same however much is left, and
/// returns how many rows it changed through its command tag. `$1` is the cutoff instant.
enum MaintenanceQueries {
    /// R-DEV-7: devices deactivated before `$1`. `push_devices_deactivated_idx`. Delivery rows
    /// stay (they key on the device id without a foreign key); the re-check of `NOT active` in the
    /// outer statement skips a device reactivated meanwhile.
    static let deleteDeactivatedDevices = """
    DELETE FROM push_devices
     WHERE id IN (SELECT id FROM push_devices
                   WHERE NOT active AND deactivated_at < $1::timestamptz
                   ORDER BY deactivated_at
                   LIMIT $2::int
                     FOR UPDATE SKIP LOCKED)
       AND NOT active
    """

    /// Jobs that reached a final state (completed, discarded, cancelled) before `$1`.
    /// `push_jobs_finalized_idx`.
    static let pruneFinishedJobs = """
    DELETE FROM push_jobs
     WHERE id IN (SELECT id FROM push_jobs
                   WHERE finalized_at IS NOT NULL AND finalized_at < $1::timestamptz
                   ORDER BY finalized_at
                   LIMIT $2::int
                     FOR UPDATE SKIP LOCKED)
    """

    /// SMS outbox rows (kind `sms`) that ended (done or failed) before `$1`: dispatch state only, the
    /// SMS's outcome stays on push_sms_outbox (R-SMS-1). `push_outbox_sms_finished_idx`.
    static let pruneFinishedSMSOutbox = """
    DELETE FROM push_outbox
     WHERE id IN (SELECT id FROM push_outbox
                   WHERE kind = 'sms' AND state IN ('done', 'failed') AND finished_at < $1::timestamptz
                   ORDER BY finished_at
                   LIMIT $2::int
                     FOR UPDATE SKIP LOCKED)
       AND state IN ('done', 'failed')
    """

    /// Final delivery rows (sent or failed) finished before `$1`. `push_deliveries_finished_idx`.
    static let deleteOldDeliveries = """
    DELETE FROM push_deliveries
     WHERE (notification_id, device_id) IN (
            SELECT notification_id, device_id FROM push_deliveries
             WHERE finished_at IS NOT NULL AND finished_at < $1::timestamptz
             ORDER BY finished_at
             LIMIT $2::int
               FOR UPDATE SKIP LOCKED)
    """

    /// Webhook events finished before `$1` (every delivery of them delivered or failed for good;
    /// undelivered ones are kept whatever their age), with their outbox rows and, by cascade, their
    /// attempt log. `push_events_delivered_idx`, then push_outbox (kind, ref_id, fair_key).
    static let deleteDeliveredEvents = """
    WITH ev AS (
        SELECT id FROM push_events
         WHERE delivered_at IS NOT NULL AND delivered_at < $1::timestamptz
         ORDER BY delivered_at
         LIMIT $2::int
           FOR UPDATE SKIP LOCKED
    ), deliveries AS (
        DELETE FROM push_outbox o USING ev WHERE o.kind = 'webhook' AND o.ref_id = ev.id
    )
    DELETE FROM push_events WHERE id IN (SELECT id FROM ev)
    """

    /// Erases the content of notifications final before `$1` (and, for `ids_only` ones, whose
    /// preview window ended before `$1` too: `preview_until`, issue 24 part 4), at most `$2`
    /// notifications, with `push_erase_content` (sql/0022: title, body, data, the kind texts, the SMS
    /// fallback's phone and text, R-SMS-1, and the request bodies test mode stored per delivery, at
    /// most 1,000 devices per test-mode app, R-DEV-6; the one definition a whole revocation uses
    /// too), marking them `content_erased_at` (issue 4 retention). The rest of the rows (status,
    /// counts, ledger, delivery outcomes) stays. Returns `erased`, the notifications erased.
    /// `push_notifications_erasable_v2_idx` (on greatest(finished_at, preview_until), sql/0020), then
    /// the primary key of push_deliveries.
    static let eraseFinalContent = """
    WITH picked AS (
        SELECT id FROM push_notifications
         WHERE finished_at IS NOT NULL AND content_erased_at IS NULL
           AND greatest(finished_at, preview_until) < $1::timestamptz
         ORDER BY greatest(finished_at, preview_until)
         LIMIT $2::int
           FOR UPDATE SKIP LOCKED
    )
    SELECT e.erased, e.payloads FROM push_erase_content(ARRAY(SELECT id FROM picked)) e
    """

    /// R-SMS-1: phone, text and test-mode request of SMS fallbacks final before `$1` whose
    /// notification's content is erased, at most `$2`; a statement of its own, after the
    /// notifications' (which lock notification rows only), so it locks SMS rows only
    /// (sql/LOCK_ORDER.md). `push_sms_outbox_erasable_idx`, then the notification's primary key.
    static let eraseFinalSMS = """
    UPDATE push_sms_outbox s
       SET phone = NULL, text = NULL, request = NULL, content_erased_at = now()
     WHERE s.id IN (SELECT x.id FROM push_sms_outbox x
                      JOIN push_notifications n ON n.id = x.notification_id
                     WHERE x.finished_at IS NOT NULL AND x.finished_at < $1::timestamptz AND x.content_erased_at IS NULL
                       AND n.content_erased_at IS NOT NULL
                     ORDER BY x.finished_at
                     LIMIT $2::int
                       FOR UPDATE OF x SKIP LOCKED)
       AND s.content_erased_at IS NULL
    """

    /// Folds the queue tally rows of sessions that ended into one row per state
    /// (`push_compact_job_tally`, sql/0013); `folded` is how many rows went.
    static let compactJobTally = "SELECT push_compact_job_tally() AS folded"

    /// Session advisory lock for maintenance, without waiting: true when taken.
    static let tryLock = "SELECT pg_try_advisory_lock($1::bigint) AS locked"

    /// Releases the lock taken by `tryLock`: true when this session held it.
    static let unlock = "SELECT pg_advisory_unlock($1::bigint) AS unlocked"
}
