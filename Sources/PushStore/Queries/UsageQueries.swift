/// SQL of the usage report and of per-user erasure (sql/0015), in one place. Parameterized.
enum UsageQueries {
    /// Deliveries charged and refunded, and SMS taken (kind `sms`, R-SMS-1), per app, mode and
    /// UTC day, from the ledger (R-SEND-9):
    /// each app of the account (or the one `$2`, within the credential's apps `$3`) probes
    /// `push_ledger_usage_idx (app_id, mode, created_at) INCLUDE (kind)` for [$5, $6). `$4` the
    /// mode (NULL: both). Deleted apps count too: what they were charged stays billable. `$7` limit;
    /// `$8`, `$9`, `$10` the cursor's day, app and mode (NULL: the first page): rows after it.
    static let report = """
    SELECT a.id AS app_id, u.mode, u.day::text AS day, u.charged, u.refunded, u.sms
      FROM push_apps a CROSS JOIN LATERAL (
          SELECT l.mode, (l.created_at AT TIME ZONE 'UTC')::date AS day,
                 count(*) FILTER (WHERE l.kind = 'charge')::int AS charged,
                 count(*) FILTER (WHERE l.kind = 'refund')::int AS refunded,
                 count(*) FILTER (WHERE l.kind = 'sms')::int AS sms
            FROM push_ledger l
           WHERE l.app_id = a.id AND l.mode IN ('test', 'live') AND ($4::text IS NULL OR l.mode = $4::text)
             AND l.created_at >= $5::timestamptz AND l.created_at < $6::timestamptz
           GROUP BY l.mode, (l.created_at AT TIME ZONE 'UTC')::date) u
     WHERE a.account_id = $1::uuid AND ($2::uuid IS NULL OR a.id = $2::uuid) AND ($3::uuid[] IS NULL OR a.id = ANY($3::uuid[]))
       AND ($8::date IS NULL OR (u.day, a.id, u.mode) > ($8::date, $9::uuid, $10::text))
     ORDER BY u.day, a.id, u.mode
     LIMIT $7::int
    """

    /// `push_erase_user` (sql/0015).
    static let eraseUser = """
    SELECT devices_deactivated, notifications_erased, notifications_unnamed, payloads_erased
      FROM push_erase_user($1::uuid, $2::text, $3::text)
    """
}
