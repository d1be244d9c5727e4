/// SQL of the generic leased outbox (`push_outbox`, sql/0009): claim, settle and rescue for any
/// kind, each one round trip through the SQL functions that own the rules (per-key bound, turns,
/// lease guard). Kind-specific statements (webhooks: `WebhookQueries`) call the same functions.
/// Indexes: `push_outbox_due_idx` (claim), `push_outbox_running_idx` (per-key bound, rescue), the
/// primary key (settle).
enum OutboxQueries {
    /// `$1` kind, `$2` owner, `$3` limit, `$4` per-key bound, `$5` lease seconds, `$6` now (or the server's).
    static let claim = """
    SELECT id, fair_key, ref_id, attempts, failures, lease_token, window_started_at
      FROM push_outbox_claim($1::text, $2::text, $3::int, $4::int, $5::float8, coalesce($6::timestamptz, now()))
    """

    /// `$1` kind, then parallel arrays: `$2` ids, `$3` lease tokens, `$4` states, `$5` run_at,
    /// `$6` failed flags, `$7` errors; `$8` now. Returns the rows settled (lease still held).
    static let settle = """
    SELECT id, fair_key, ref_id, attempts, state
      FROM push_outbox_settle($1::text, $2::bigint[], $3::uuid[], $4::text[], $5::timestamptz[], $6::boolean[],
                              $7::text[], coalesce($8::timestamptz, now()))
    """

    /// `$1` kind, `$2` window seconds, `$3` limit, `$4` now. Returns each rescued row and its new state.
    static let rescue = """
    SELECT id, ref_id, state FROM push_outbox_rescue($1::text, $2::float8, $3::int, coalesce($4::timestamptz, now()))
    """
}
