/// SQL of the audit log (`push_audit_events`, sql/0015), in one place. Parameterized.
enum AuditQueries {
    static let columns = "id, account_id, app_id, actor, action, target, details::text AS details, created_at"

    /// One event. `$1` the account (NULL: the app `$2`'s account), `$2` the app, `$3` actor,
    /// `$4` action, `$5` target, `$6` details. Writes nothing when neither names an account.
    static let record = """
    INSERT INTO push_audit_events (account_id, app_id, actor, action, target, details)
    SELECT coalesce($1::uuid, a.account_id), $2::uuid, $3::text, $4::text, $5::text, $6::jsonb
      FROM (SELECT 1) one LEFT JOIN push_apps a ON a.id = $2::uuid
     WHERE coalesce($1::uuid, a.account_id) IS NOT NULL
    RETURNING \(columns)
    """

    /// An account's events newest first (`push_audit_events_account_idx`, or
    /// `push_audit_events_app_idx` with an app). `$1` account, `$2` app, `$3` the credential's
    /// apps (NULL: all; a scoped credential sees only its apps' events), `$4` cursor event, `$5` limit.
    static let list = """
    SELECT \(columns) FROM push_audit_events
     WHERE account_id = $1::uuid AND ($2::uuid IS NULL OR app_id = $2::uuid)
       AND ($3::uuid[] IS NULL OR app_id = ANY($3::uuid[]))
       AND ($4::uuid IS NULL OR (created_at, id) < (SELECT c.created_at, c.id FROM push_audit_events c WHERE c.id = $4::uuid))
     ORDER BY created_at DESC, id DESC LIMIT $5::int
    """

    /// Whether the event is the account's (a cursor must be).
    static let visible = "SELECT 1 FROM push_audit_events WHERE id = $1::uuid AND account_id = $2::uuid"
}
