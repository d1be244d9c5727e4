/// SQL of apps, devices and notifications (the API side), in one place. Parameterized; casts are
/// explicit so function resolution never depends on parameter type inference.
enum RegistryQueries {
    /// `$5` the owning account (R-API-1); NULL: the default account of sql/0008. No row when the
    /// account does not exist.
    static let appCreate = """
    INSERT INTO push_apps (name, require_encryption, placeholder_title, placeholder_body, account_id)
    SELECT $1::text, coalesce($2::boolean, false), coalesce($3::text, 'New notification'), coalesce($4::text, ''), c.id
      FROM push_accounts c WHERE c.id = coalesce($5::uuid, push_default_account())
    RETURNING id, name, require_encryption, placeholder_title, placeholder_body, deleted_at IS NOT NULL AS deleted
    """

    /// One statement: the row is locked, updated, and turning `require_encryption` off records a
    /// `push_app.encryption_disabled` event for the live mode in the same transaction (R-PRV-4;
    /// the seeds make the dashboard ask for confirmation, an API can only make it visible).
    static let appUpdate = """
    WITH before AS (
        SELECT id, require_encryption FROM push_apps WHERE id = $1::uuid AND deleted_at IS NULL FOR UPDATE
    ), updated AS (
        UPDATE push_apps a SET require_encryption = coalesce($2::boolean, a.require_encryption),
                               placeholder_title = coalesce($3::text, a.placeholder_title),
                               placeholder_body = coalesce($4::text, a.placeholder_body),
                               name = coalesce($5::text, a.name), updated_at = now()
          FROM before
         WHERE a.id = before.id
        RETURNING a.id, a.name, a.require_encryption, a.placeholder_title, a.placeholder_body,
                  a.deleted_at IS NOT NULL AS deleted, before.require_encryption AS was_required
    ), disabled AS (
        INSERT INTO push_events (app_id, type, payload)
        SELECT u.id, 'push_app.encryption_disabled',
               jsonb_build_object('app_id', u.id, 'mode', 'live', 'require_encryption', false)
          FROM updated u WHERE u.was_required AND NOT u.require_encryption
    )
    SELECT id, name, require_encryption, placeholder_title, placeholder_body, deleted FROM updated
    """

    static let appDelete = "UPDATE push_apps SET deleted_at = now() WHERE id = $1::uuid AND deleted_at IS NULL"

    static let appGet = """
    SELECT id, name, require_encryption, placeholder_title, placeholder_body, deleted_at IS NOT NULL AS deleted
      FROM push_apps WHERE id = $1::uuid
    """

    static let registerDevice = """
    SELECT device_id, created, reactivated, evicted
      FROM push_register_device($1::uuid, $2::text, $3::text, $4::text, $5::text, $6::bytea, $7::bytea, $8::text,
                                $9::text, $10::text, $11::bytea, $12::text, $13::bigint, $14::int)
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
                        coalesce($18::timestamptz, now()))
    """

    static let cancel = "SELECT push_cancel($1::uuid) AS cancelled"

    static let notificationGet = """
    SELECT id, app_id, mode, status, encrypted, device_count, error_code, send_at, accepted_at, started_at,
           finished_at, expires_at, priority, collapse_key, idempotency_key, user_ids
      FROM push_notifications WHERE id = $1::uuid
    """

    static let notificationDeliveries = """
    SELECT device_id, status, error_code, error_detail, encrypted, provider, provider_message_id, apns_id, attempts,
           next_attempt_at, payload, finished_at
      FROM push_deliveries WHERE notification_id = $1::uuid ORDER BY created_at, device_id
    """

    static let notificationLedger = """
    SELECT device_id, kind, reason FROM push_ledger WHERE notification_id = $1::uuid ORDER BY device_id, kind
    """
}
