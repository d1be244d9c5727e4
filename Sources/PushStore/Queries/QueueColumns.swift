/// Column positions of the queue's two hot results, `JobQueries.claimBatch` and
/// `JobQueries.loadBatchDevices`.

/// Columns of `JobQueries.claimBatch`:
/// positions looked up once per result: a name lookup hashes the name, and these decoders read
/// about twenty columns per row. Throws `DB_DECODE` when a column is missing.
struct ClaimColumns {
    let kind, deviceIds, notificationId, appId, mode, status, title, body, data, badge, sound, threadId,
        collapseKey, priority, ttlSeconds, acceptedAt, sendAt, expiresAt, encrypted, contentMode, hasSms, requireEncryption,
        placeholderTitle, placeholderBody, appDeleted, id, leaseToken, attempt, maxAttempts, problem: Int
    let kinds: KindColumns

    init(_ r: PGResult) throws {
        kind = try r.columnIndex(named: "kind")
        deviceIds = try r.columnIndex(named: "device_ids")
        notificationId = try r.columnIndex(named: "notification_id")
        appId = try r.columnIndex(named: "app_id")
        mode = try r.columnIndex(named: "mode")
        status = try r.columnIndex(named: "status")
        title = try r.columnIndex(named: "title")
        body = try r.columnIndex(named: "body")
        data = try r.columnIndex(named: "data")
        badge = try r.columnIndex(named: "badge")
        sound = try r.columnIndex(named: "sound")
        threadId = try r.columnIndex(named: "thread_id")
        collapseKey = try r.columnIndex(named: "collapse_key")
        priority = try r.columnIndex(named: "priority")
        ttlSeconds = try r.columnIndex(named: "ttl_seconds")
        acceptedAt = try r.columnIndex(named: "accepted_at")
        sendAt = try r.columnIndex(named: "send_at")
        expiresAt = try r.columnIndex(named: "expires_at")
        encrypted = try r.columnIndex(named: "encrypted")
        contentMode = try r.columnIndex(named: "content_mode")
        hasSms = try r.columnIndex(named: "has_sms")
        requireEncryption = try r.columnIndex(named: "require_encryption")
        placeholderTitle = try r.columnIndex(named: "placeholder_title")
        placeholderBody = try r.columnIndex(named: "placeholder_body")
        appDeleted = try r.columnIndex(named: "app_deleted")
        id = try r.columnIndex(named: "id")
        leaseToken = try r.columnIndex(named: "lease_token")
        attempt = try r.columnIndex(named: "attempt")
        maxAttempts = try r.columnIndex(named: "max_attempts")
        problem = try r.columnIndex(named: "problem")
        kinds = try KindColumns(r)
    }
}

/// Columns of `JobQueries.loadBatchDevices`:
/// positions looked up once per result: a name lookup hashes the name, and these decoders read
/// about twenty columns per row. Throws `DB_DECODE` when a column is missing.
struct DeviceColumns {
    let batch, deviceId, found, targeted, platform, token, endpoint, p256dh, authSecret, apnsEnvironment,
        publicKey, kid, lastRegisteredAt, deliveryStatus, attempts, failures, nextAttemptAt, charged,
        apnsId: Int

    init(_ r: PGResult) throws {
        batch = try r.columnIndex(named: "batch")
        deviceId = try r.columnIndex(named: "device_id")
        found = try r.columnIndex(named: "found")
        targeted = try r.columnIndex(named: "targeted")
        platform = try r.columnIndex(named: "platform")
        token = try r.columnIndex(named: "token")
        endpoint = try r.columnIndex(named: "endpoint")
        p256dh = try r.columnIndex(named: "p256dh")
        authSecret = try r.columnIndex(named: "auth_secret")
        apnsEnvironment = try r.columnIndex(named: "apns_environment")
        publicKey = try r.columnIndex(named: "public_key")
        kid = try r.columnIndex(named: "kid")
        lastRegisteredAt = try r.columnIndex(named: "last_registered_at")
        deliveryStatus = try r.columnIndex(named: "delivery_status")
        attempts = try r.columnIndex(named: "attempts")
        failures = try r.columnIndex(named: "failures")
        nextAttemptAt = try r.columnIndex(named: "next_attempt_at")
        charged = try r.columnIndex(named: "charged")
        apnsId = try r.columnIndex(named: "apns_id")
    }
}
