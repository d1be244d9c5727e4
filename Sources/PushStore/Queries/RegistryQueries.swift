/// SQL of apps, devices and notifications (the API side), in one place. Parameterized; casts are
/// explicit so function resolution never depends on parameter type inference.
enum RegistryQueries {
    /// The app's columns as `AppStore` decodes them (sql/0006 `push_app_create`).
    static let appColumns = "id, name, require_encryption, placeholder_title, placeholder_body, deleted, created_at, updated_at"

    /// `$5` the owning account (R-API-1); NULL: the default account (sql/0008).
    static let appCreate = """
    SELECT \(appColumns) FROM push_app_create($1::text, $2::boolean, $3::text, $4::text, $5::uuid)
    """

    /// sql/0019 `push_app_update`: the app's columns, its placeholder loc keys and content mode.
    static let appUpdateColumns = "\(appColumns), placeholder_title_loc_key, placeholder_body_loc_key, content_mode"

    /// The policy before a change, the app row locked (primary key; `AppStore.lockedPolicy`).
    static let appLockPolicy = """
    SELECT require_encryption, content_mode FROM push_apps WHERE id = $1::uuid AND deleted_at IS NULL FOR UPDATE
    """

    static let appUpdate = """
    SELECT \(appUpdateColumns) FROM push_app_update($1::uuid, $2::boolean, $3::text, $4::text, $5::text, $6::text, $7::text, $8::text)
    """

    /// sql/0020 `push_app_set_preview`: the preview settings (NULL: unchanged), and the whole app
    /// (its answer with the content mode of sql/0019 beside it, by primary key).
    static let appSetPreview = """
    SELECT p.*, a.content_mode FROM push_app_set_preview($1::uuid, $2::boolean, $3::int) p
      JOIN push_apps a ON a.id = p.id
    """

    static let appDelete = "UPDATE push_apps SET deleted_at = now() WHERE id = $1::uuid AND deleted_at IS NULL"

    static let appGet = """
    SELECT id, name, require_encryption, placeholder_title, placeholder_body, placeholder_title_loc_key,
           placeholder_body_loc_key, confirm_deliveries, preview_window_seconds, deleted_at IS NOT NULL AS deleted,
           created_at, updated_at, content_mode
      FROM push_apps WHERE id = $1::uuid
    """

    /// `PlatformStore.serve` (sql/0024): the provider table's platforms into `push_platforms`, one
    /// statement, rows in platform order; an unchanged row is not written.
    static let servePlatforms = """
    INSERT INTO push_platforms AS p (platform, addressing, encrypts_itself)
    SELECT t.platform, t.addressing, t.encrypts_itself
      FROM unnest($1::text[], $2::text[], $3::boolean[]) AS t(platform, addressing, encrypts_itself)
     ORDER BY t.platform
    ON CONFLICT (platform) DO UPDATE SET addressing = excluded.addressing, encrypts_itself = excluded.encrypts_itself,
                                         updated_at = now()
     WHERE (p.addressing, p.encrypts_itself) IS DISTINCT FROM (excluded.addressing, excluded.encrypts_itself)
    """

    /// `PlatformStore.served`: every row of `push_platforms` (primary key order).
    static let servedPlatforms = "SELECT platform, addressing, encrypts_itself FROM push_platforms ORDER BY platform"

    /// The registration upsert, the device as stored and whether its preview token was set
    /// (sql/0020 `push_register_device_v3` around sql/0006's `push_register_device_v2`).
    static let registerDevice = """
    SELECT device_id, created, reactivated, evicted, app_id, platform, user_id, apns_environment, active, kid,
           created_at, last_registered_at, preview_token_set
      FROM push_register_device_v3($1::uuid, $2::text, $3::text, $4::text, $5::text, $6::bytea, $7::bytea, $8::text,
                                   $9::text, $10::text, $11::bytea, $12::text, $13::bigint, $14::int, $15::bytea,
                                   $16::boolean)
    """

    static let deleteDevice = "SELECT push_delete_device($1::uuid, $2::text, $3::uuid) AS deleted"

    /// Never selects `public_key` (R-DEV-3): only its kid. Uses `push_devices_audience_idx` with a user.
    static let listDevices = """
    SELECT id, platform, token, endpoint, user_id, apns_environment, kid, active, last_registered_at,
           deactivated_at, deactivation_reason
      FROM push_devices
     WHERE app_id = $1::uuid AND mode = $2::text AND ($3::text IS NULL OR user_id = $3::text)
       AND ($4::boolean IS NULL OR active = $4::boolean)
     ORDER BY last_registered_at DESC, id
     LIMIT $5::int
    """

    /// The app (no row: unknown) and, beside it, each device a notification would target now (a row
    /// with `id` null when none): the acceptance size check's inputs in one round trip (R-SEND-7).
    /// `push_devices_audience_idx`.
    static let sendPreview = """
    SELECT a.id AS app_id, a.name, a.require_encryption, a.placeholder_title, a.placeholder_body,
           a.placeholder_title_loc_key, a.placeholder_body_loc_key, a.deleted_at IS NOT NULL AS deleted, a.created_at, a.updated_at,
           a.content_mode, d.id, d.platform, coalesce(d.token, d.endpoint) AS address, d.apns_environment, d.public_key, d.kid
      FROM push_apps a
      LEFT JOIN push_devices d ON d.app_id = a.id AND d.mode = $2::text AND d.active AND d.user_id = ANY ($3::text[])
                              AND ($4::uuid[] IS NULL OR d.id = ANY ($4::uuid[]))
     WHERE a.id = $1::uuid
    """

    /// The devices a notification would target now, for the acceptance size check (R-SEND-7).
    static let audiencePreview = """
    SELECT d.id, d.platform, coalesce(d.token, d.endpoint) AS address, d.apns_environment, d.public_key, d.kid
      FROM push_devices d
     WHERE d.app_id = $1::uuid AND d.mode = $2::text AND d.active AND d.user_id = ANY ($3::text[])
       AND ($4::uuid[] IS NULL OR d.id = ANY ($4::uuid[]))
    """

    static let enqueue = """
    SELECT notification_id, created
      FROM push_enqueue($1::uuid, $2::text, $3::text[], $4::uuid[], $5::text, $6::text, $7::text, $8::int, $9::text,
                        $10::text, $11::text, $12::text, $13::timestamptz, $14::int, $15::text, $16::text, $17::text,
                        coalesce($18::timestamptz, now()), $19::text, $20::text, $21::float8, $22::text, $23::text,
                        $24::text, $25::float8, $26::text, $27::text[], $28::text, $29::text[], $30::text,
                        $31::text, $32::text[])
    """

    static let cancel = "SELECT push_cancel($1::uuid) AS cancelled"

    static let notificationByIdempotencyKey = """
    SELECT id FROM push_notifications WHERE app_id = $1::uuid AND mode = $2::text AND idempotency_key = $3::text
    """

    /// A notification's app and mode, for scoping a cancel (R-MODE-1).
    static let notificationScope = "SELECT app_id, mode, status FROM push_notifications WHERE id = $1::uuid"

    static let notificationGet = """
    SELECT id, app_id, mode, status, encrypted, content_mode, device_count, error_code, send_at, accepted_at, started_at,
           finished_at, expires_at, priority, collapse_key, idempotency_key, user_ids, revoked_at, revoked_user_ids,
           audience, audience_platforms
      FROM push_notifications WHERE id = $1::uuid
    """

    static let notificationDeliveries = """
    SELECT device_id, status, error_code, error_detail, encrypted, provider, provider_message_id, apns_id, attempts,
           next_attempt_at, payload, finished_at, confirmed_at
      FROM push_deliveries WHERE notification_id = $1::uuid ORDER BY created_at, device_id
    """

    static let notificationLedger = """
    SELECT device_id, kind, reason FROM push_ledger WHERE notification_id = $1::uuid ORDER BY device_id, kind
    """
}
