/// SQL of the SMS fallback (R-SMS-1, sql/0012): the rows a claim returned, the begin mark, the
/// record, the rescue and the notification's read. The claim itself is the generic outbox's
/// (`OutboxQueries.claim`, kind `sms`). Indexes: the primary keys of push_sms_outbox and
/// push_notifications, push_sms_outbox's unique notification_id.
enum SMSQueries {
    /// The SMS rows of claimed outbox rows `$1` (push_sms_outbox ids), with their notification's mode
    /// and expiry, in one round trip.
    static let load = """
    SELECT s.id, s.notification_id, s.app_id, n.mode, s.phone, s.text, s.status, s.attempts, s.deferrals,
           s.created_at, n.expires_at
      FROM push_sms_outbox s
      JOIN push_notifications n ON n.id = s.notification_id
     WHERE s.id = ANY ($1::bigint[])
    """

    /// `$1` outbox ids, `$2` their lease tokens, `$3` now. Returns the outbox ids begun.
    static let begin = """
    SELECT outbox_id FROM push_sms_begin($1::bigint[], $2::uuid[], coalesce($3::timestamptz, now()))
    """

    /// `$1` the attempts (a JSON array of push_sms_attempt), `$2` now. Returns the outbox ids recorded.
    static let record = """
    SELECT outbox_id FROM push_sms_record($1::json, coalesce($2::timestamptz, now()))
    """

    /// `$1` limit, `$2` now.
    static let rescue = """
    SELECT unknown, rescued FROM push_sms_rescue($1::int, coalesce($2::timestamptz, now()))
    """

    /// SMS not final in the outbox (push_outbox_due_idx, push_outbox_running_idx).
    static let open = """
    SELECT (SELECT count(*) FROM push_outbox WHERE kind = 'sms' AND state = 'available')
         + (SELECT count(*) FROM push_outbox WHERE kind = 'sms' AND state = 'running') AS n
    """

    /// A notification's SMS fallback as `SMSStore.report(_:_:)` decodes it: every column prefixed
    /// `sms_` (the API's notification reads join it beside the notification's and deliveries' own
    /// `status` and `error_code`); `sms_status` is NULL when the notification has none. `s` is
    /// push_sms_outbox.
    static let reportColumns = """
    s.status AS sms_status, s.provider AS sms_provider, s.provider_message_id AS sms_provider_message_id,
    s.error_code AS sms_error_code, s.provider_error_code AS sms_provider_error_code, s.error_detail AS sms_error_detail,
    s.attempts AS sms_attempts, s.segments AS sms_segments, s.encoding AS sms_encoding, s.text AS sms_text,
    s.request AS sms_request, s.created_at AS sms_created_at, s.sent_at AS sms_sent_at, s.finished_at AS sms_finished_at,
    s.content_erased_at IS NOT NULL AS sms_erased
    """

    /// A notification's SMS fallback (`notifications show`; the API reads the same columns joined).
    static let byNotification = """
    SELECT \(reportColumns) FROM push_sms_outbox s WHERE s.notification_id = $1::uuid
    """
}
