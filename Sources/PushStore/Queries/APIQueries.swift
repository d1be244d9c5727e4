/// SQL of the HTTP API's reads (`APIReadStore`), each scoped to the key's account and mode
/// (R-API-1, R-MODE-1): another account's or mode's object is simply not found. Lists are newest
/// first with keyset pagination on (created_at, id); a cursor is resolved by id inside the query.
enum APIQueries {
    static let deviceColumns = """
    d.id, d.app_id, d.platform, d.user_id, d.apns_environment, d.active, d.kid, d.created_at, d.last_registered_at
    """

    /// Primary key, then the app's primary key.
    static let deviceGet = """
    SELECT \(deviceColumns)
      FROM push_devices d JOIN push_apps a ON a.id = d.app_id
     WHERE d.id = $1::uuid AND d.mode = $2::text AND a.account_id = $3::uuid AND a.deleted_at IS NULL
       AND ($4::uuid[] IS NULL OR a.id = ANY($4::uuid[]))
    """

    /// The account's apps (or the one `$2`), each contributing at most `$7` rows from
    /// `push_devices_list_idx` / `push_devices_user_list_idx`, merged newest first.
    /// `$1` account, `$2` app, `$3` mode, `$4` user, `$5` active, `$6` cursor device, `$7` limit,
    /// `$8` the key's apps (NULL: every app of the account).
    static let deviceList = """
    SELECT d.* FROM push_apps a CROSS JOIN LATERAL (
        SELECT \(deviceColumns) FROM push_devices d
         WHERE d.app_id = a.id AND d.mode = $3::text
           AND ($4::text IS NULL OR d.user_id = $4::text) AND ($5::boolean IS NULL OR d.active = $5::boolean)
           AND ($6::uuid IS NULL OR (d.created_at, d.id) < (SELECT c.created_at, c.id FROM push_devices c WHERE c.id = $6::uuid))
         ORDER BY d.created_at DESC, d.id DESC LIMIT $7::int) d
     WHERE a.account_id = $1::uuid AND a.deleted_at IS NULL AND ($2::uuid IS NULL OR a.id = $2::uuid)
       AND ($8::uuid[] IS NULL OR a.id = ANY($8::uuid[]))
     ORDER BY d.created_at DESC, d.id DESC LIMIT $7::int
    """

    /// The app's columns as `AppStore.decode` reads them (a `PushApp`), from `push_apps a`.
    static let appColumns = """
    a.id, a.name, a.require_encryption, a.placeholder_title, a.placeholder_body, a.placeholder_title_loc_key, \
    a.placeholder_body_loc_key, a.confirm_deliveries, a.preview_window_seconds, a.deleted_at IS NOT NULL AS deleted, \
    a.created_at, a.updated_at, a.content_mode
    """

    static let appGet = """
    SELECT \(appColumns) FROM push_apps a WHERE a.id = $1::uuid AND a.account_id = $2::uuid AND a.deleted_at IS NULL
       AND ($3::uuid[] IS NULL OR a.id = ANY($3::uuid[]))
    """

    /// `push_apps_account_idx`. `$1` account, `$2` cursor app, `$3` limit, `$4` the key's apps.
    static let appList = """
    SELECT \(appColumns) FROM push_apps a
     WHERE a.account_id = $1::uuid AND a.deleted_at IS NULL AND ($4::uuid[] IS NULL OR a.id = ANY($4::uuid[]))
       AND ($2::uuid IS NULL OR (a.created_at, a.id) < (SELECT c.created_at, c.id FROM push_apps c WHERE c.id = $2::uuid))
     ORDER BY a.created_at DESC, a.id DESC LIMIT $3::int
    """

    static let notificationColumns = """
    n.id, n.app_id, n.status, n.encrypted, n.content_mode, n.device_count, n.error_code, n.send_at, n.accepted_at, \
    n.finished_at, n.revoked_at IS NOT NULL AS revoked, n.audience, n.audience_platforms, \
    cardinality(n.user_ids) AS user_count
    """

    /// A delivery's columns as `APIReadStore.notificationWithDeliveries` reads them, from `push_deliveries v`.
    static let deliveryColumns = """
    v.device_id, v.status AS delivery_status, v.encrypted AS delivery_encrypted, v.error_code AS delivery_error_code, \
    v.attempts, v.confirmed_at AS delivery_confirmed_at
    """

    /// The notification, its SMS fallback (push_sms_outbox's unique notification_id) and its
    /// deliveries in one round trip (primary keys; one row per delivery, or one row with NULL
    /// delivery columns).
    static let notificationGet = """
    SELECT \(notificationColumns), \(SMSQueries.reportColumns), \(deliveryColumns)
      FROM push_notifications n JOIN push_apps a ON a.id = n.app_id
      LEFT JOIN push_sms_outbox s ON s.notification_id = n.id
      LEFT JOIN push_deliveries v ON v.notification_id = n.id
     WHERE n.id = $1::uuid AND n.mode = $2::text AND a.account_id = $3::uuid AND a.deleted_at IS NULL
       AND ($4::uuid[] IS NULL OR a.id = ANY($4::uuid[]))
     ORDER BY v.created_at, v.device_id
    """

    /// As `deviceList`, from `push_notifications_list_idx`, each with its SMS fallback (one probe of
    /// push_sms_outbox's unique notification_id per row) and its confirmed deliveries (R-IDS-4: a
    /// range of push_deliveries' primary key per row). `$1` account, `$2` app, `$3` mode,
    /// `$4` status, `$5` cursor notification, `$6` limit, `$7` the key's apps.
    static let notificationList = """
    SELECT n.* FROM push_apps a CROSS JOIN LATERAL (
        SELECT \(notificationColumns), \(SMSQueries.reportColumns),
               (SELECT count(*) FROM push_deliveries c
                 WHERE c.notification_id = n.id AND c.confirmed_at IS NOT NULL)::int AS confirmed_count
          FROM push_notifications n
          LEFT JOIN push_sms_outbox s ON s.notification_id = n.id
         WHERE n.app_id = a.id AND n.mode = $3::text AND ($4::text IS NULL OR n.status = $4::text)
           AND ($5::uuid IS NULL
                OR (n.accepted_at, n.id) < (SELECT c.accepted_at, c.id FROM push_notifications c WHERE c.id = $5::uuid))
         ORDER BY n.accepted_at DESC, n.id DESC LIMIT $6::int) n
     WHERE a.account_id = $1::uuid AND a.deleted_at IS NULL AND ($2::uuid IS NULL OR a.id = $2::uuid)
       AND ($7::uuid[] IS NULL OR a.id = ANY($7::uuid[]))
     ORDER BY n.accepted_at DESC, n.id DESC LIMIT $6::int
    """

    /// Whether the notification is visible to the account and mode (before a cancel).
    static let notificationVisible = """
    SELECT n.app_id FROM push_notifications n JOIN push_apps a ON a.id = n.app_id
     WHERE n.id = $1::uuid AND n.mode = $2::text AND a.account_id = $3::uuid AND a.deleted_at IS NULL
       AND ($4::uuid[] IS NULL OR a.id = ANY($4::uuid[]))
    """
}

/// The GET-by-id reads fused with the key lookup (`APIKeyedReads`): one statement, one round trip,
/// finds the key by its hash (`push_api_keys_hash_key`) and the object scoped to that key's account
/// and mode (primary keys), within the key's apps when it is scoped to some (issue 15 part 3). No
/// row: no such key; a row with a NULL object: not visible.
enum APIKeyedQueries {
    static let keyColumns = """
    k.id AS key_id, k.account_id AS key_account_id, k.mode AS key_mode, k.permissions AS key_permissions,
    k.rate_limit_per_second AS key_rate_limit, k.revoked_at IS NOT NULL AS key_revoked, k.app_ids AS key_app_ids
    """

    static let device = """
    SELECT \(keyColumns), \(APIQueries.deviceColumns)
      FROM push_api_keys k
      LEFT JOIN (push_devices d JOIN push_apps a ON a.id = d.app_id AND a.deleted_at IS NULL)
             ON d.id = $2::uuid AND d.mode = k.mode AND a.account_id = k.account_id
            AND (k.app_ids IS NULL OR a.id = ANY(k.app_ids))
     WHERE k.key_hash = $1::bytea
    """

    static let app = """
    SELECT \(keyColumns), \(APIQueries.appColumns)
      FROM push_api_keys k
      LEFT JOIN push_apps a ON a.id = $2::uuid AND a.account_id = k.account_id AND a.deleted_at IS NULL
            AND (k.app_ids IS NULL OR a.id = ANY(k.app_ids))
     WHERE k.key_hash = $1::bytea
    """

    static let notification = """
    SELECT \(keyColumns), \(APIQueries.notificationColumns), \(SMSQueries.reportColumns), \(APIQueries.deliveryColumns)
      FROM push_api_keys k
      LEFT JOIN (push_notifications n JOIN push_apps a ON a.id = n.app_id AND a.deleted_at IS NULL)
             ON n.id = $2::uuid AND n.mode = k.mode AND a.account_id = k.account_id
            AND (k.app_ids IS NULL OR a.id = ANY(k.app_ids))
      LEFT JOIN push_sms_outbox s ON s.notification_id = n.id
      LEFT JOIN push_deliveries v ON v.notification_id = n.id
     WHERE k.key_hash = $1::bytea
     ORDER BY v.created_at, v.device_id
    """
}
