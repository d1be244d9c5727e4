/// SQL of the preview fetch, receipts and revocation (issue 24 parts 3 to 5, R-IDS-2..4). The
/// fetch and the receipt share `probe`: one row whatever they were sent, built by the same four
/// probes every time (the token's device by `push_devices_preview_token_key`, the notification,
/// the delivery and the app by their primary keys; a probe whose key is missing looks up the
/// all-zero id instead), so that every refusal does the same lookups (R-IDS-3: no answer and no
/// amount of work tells an unknown token from a known one). `$1` the token's SHA-256, `$2` the
/// notification id (the all-zero id for a malformed one).
enum PreviewQueries {
    static let zero = "'00000000-0000-0000-0000-000000000000'::uuid"

    /// `allowed`: the fetch's rule (R-IDS-2), true only when every condition holds now: the
    /// notification's content mode written at its send time is `ids_only` (a sealed notification's
    /// device opens its push and never needs the fetch: refused alike, sql/0022), the
    /// device's delivery of the notification was sent, the device is active, of the notification's
    /// app and mode, still belongs to an addressed user (and is one of its devices when it named
    /// some) or, for a whole-app audience (issue 22), is of one of its platforms, the content is neither revoked (for all, or for the device's user) nor erased, its
    /// preview window (`preview_until`) is not over, and the app is not deleted. `delivered`: the
    /// receipt's rule: the token's device has a sent delivery of the notification. Content columns
    /// are NULL unless `allowed`.
    static let probe = """
    raw AS (
        SELECT d.id AS device_id, d.platform, d.public_key, d.kid, d.active, d.user_id, d.app_id AS device_app_id,
               d.mode AS device_mode, n.id AS notification_id, n.app_id, n.mode, n.user_ids, n.device_ids,
               n.audience, n.audience_platforms, n.content_mode,
               n.revoked_at, n.revoked_user_ids, n.content_erased_at, n.preview_until, n.title, n.body, n.data,
               n.badge, n.sound, n.thread_id, n.title_loc_key, n.title_loc_args, n.body_loc_key, n.body_loc_args,
               v.status AS delivery_status, v.confirmed_at, v.finished_at AS delivery_finished_at,
               a.confirm_deliveries, a.confirm_deliveries_since, a.deleted_at AS app_deleted_at
          FROM (SELECT $1::bytea AS token_hash, $2::uuid AS notification_id) k
          LEFT JOIN push_devices d ON d.preview_token_hash = k.token_hash
          LEFT JOIN push_notifications n ON n.id = k.notification_id
          LEFT JOIN push_deliveries v ON v.notification_id = k.notification_id
                                     AND v.device_id = coalesce(d.id, \(zero))
          LEFT JOIN push_apps a ON a.id = coalesce(n.app_id, \(zero))
    ), probe AS (
        SELECT r.*,
               coalesce(r.device_id IS NOT NULL AND r.delivery_status = 'sent' AND r.device_app_id = r.app_id
                        AND r.device_mode = r.mode, false) AS delivered,
               coalesce(r.device_id IS NOT NULL AND r.delivery_status = 'sent' AND r.active
                        AND r.device_app_id = r.app_id AND r.device_mode = r.mode
                        AND (r.user_id = ANY (r.user_ids)
                             OR (r.audience = 'all' AND (r.audience_platforms IS NULL OR r.platform = ANY (r.audience_platforms))))
                        AND (r.device_ids IS NULL OR r.device_id = ANY (r.device_ids))
                        AND r.revoked_at IS NULL AND NOT (r.user_id = ANY (r.revoked_user_ids))
                        AND r.content_erased_at IS NULL AND (r.preview_until IS NULL OR r.preview_until > now())
                        AND r.app_deleted_at IS NULL AND r.content_mode = 'ids_only', false) AS allowed
          FROM raw r
    )
    """

    /// The one definition of a delivery that counts towards the confirmation rate (R-IDS-4,
    /// sql/0022): its app confirms deliveries and the delivery was sent (finished) since
    /// `confirm_deliveries_since`, when the switch was last turned on. `finished` and `since` are
    /// the two columns as the statement names them. The confirmation step, `confirmationRates`
    /// (`pushfleet stats`) and the worker's `pushfleet_pushes_sent_total` (`JobQueries.confirmingApps`
    /// answers each app's time) count the same deliveries.
    static func counted(finished: String, since: String) -> String { "\(finished) >= \(since)" }

    /// The `confirmed` step (R-IDS-4): the probed delivery marked `confirmed_at` when `condition`
    /// holds, it counts towards the rate (`counted`) and it is not confirmed yet (so a second one
    /// changes nothing); its rows are the deliveries this statement confirmed.
    static func confirmed(when condition: String) -> String {
        """
        confirmed AS (
            UPDATE push_deliveries v SET confirmed_at = clock_timestamp()
              FROM probe p
             WHERE \(condition) AND p.confirm_deliveries
               AND \(counted(finished: "p.delivery_finished_at", since: "p.confirm_deliveries_since"))
               AND v.notification_id = p.notification_id AND v.device_id = p.device_id AND v.confirmed_at IS NULL
            RETURNING v.device_id
        )
        """
    }

    /// The fetch: the probe's row with the content when allowed, and the first successful fetch of a
    /// delivery of an app with `confirm_deliveries` marks it `confirmed_at` (R-IDS-4) in the same
    /// statement; `newly_confirmed` is true only for that first one. `$3` false (a `HEAD`, which
    /// delivers no content) confirms nothing; the lookups are the same.
    static let fetch = """
    WITH \(probe), \(confirmed(when: "p.allowed AND $3::boolean"))
    SELECT p.allowed, p.device_id, p.notification_id, p.app_id, p.mode, p.platform,
           CASE WHEN p.allowed THEN p.public_key END AS public_key, CASE WHEN p.allowed THEN p.kid END AS kid,
           CASE WHEN p.allowed THEN p.title END AS title, CASE WHEN p.allowed THEN p.body END AS body,
           CASE WHEN p.allowed THEN p.data END AS data, CASE WHEN p.allowed THEN p.badge END AS badge,
           CASE WHEN p.allowed THEN p.sound END AS sound, CASE WHEN p.allowed THEN p.thread_id END AS thread_id,
           CASE WHEN p.allowed THEN p.title_loc_key END AS title_loc_key,
           CASE WHEN p.allowed THEN array_to_json(p.title_loc_args)::text END AS title_loc_args,
           CASE WHEN p.allowed THEN p.body_loc_key END AS body_loc_key,
           CASE WHEN p.allowed THEN array_to_json(p.body_loc_args)::text END AS body_loc_args,
           (SELECT count(*) FROM confirmed) > 0 AS newly_confirmed
      FROM probe p
    """

    /// A receipt (what an extension sends after opening a sealed push): marks the delivery
    /// `confirmed_at` when the token's device has a sent delivery of the notification and its app
    /// has `confirm_deliveries`; anything else changes nothing. One row, `newly_confirmed` and
    /// the labels of the confirmation metric.
    static let receipt = """
    WITH \(probe), \(confirmed(when: "p.delivered"))
    SELECT p.app_id, p.mode, p.platform, (SELECT count(*) FROM confirmed) > 0 AS newly_confirmed FROM probe p
    """

    /// `PreviewStore.confirmationRates`: `$1` the window's start; only deliveries that count
    /// towards the rate (`counted`).
    static let confirmationRates = """
    SELECT n.app_id, n.mode, coalesce(d.platform, 'other') AS platform, count(*)::bigint AS sent,
           count(v.confirmed_at)::bigint AS confirmed
      FROM push_deliveries v
      JOIN push_notifications n ON n.id = v.notification_id
      JOIN push_apps a ON a.id = n.app_id AND a.confirm_deliveries
                      AND \(counted(finished: "v.finished_at", since: "a.confirm_deliveries_since"))
      LEFT JOIN push_devices d ON d.id = v.device_id
     WHERE v.finished_at IS NOT NULL AND v.finished_at >= $1::timestamptz AND v.status = 'sent'
     GROUP BY 1, 2, 3
     ORDER BY 1, 2, 3
    """

    /// `push_revoke` (sql/0022: a whole revocation erases the content, at once when final, else when it becomes final).
    static let revoke = "SELECT push_revoke($1::uuid, $2::text[]) AS revoked"
}
