/// SQL of app credential sets (R-APP-3, R-APP-4; push sets in `push_credentials`, the SMS
/// provider's in `push_sms_credentials`) and of the shared provider-token cache
/// (`push_provider_tokens`), in one place. Parameterized, with explicit casts.
enum CredentialQueries {
    /// Columns every read returns. `version` changes whenever the set itself (config or sealed
    /// secret) is replaced, not when only its state moves.
    static let columns = """
    app_id, kind, config::text AS config, sealed_secret, key_version, state, first_accepted_at, invalid_reason,
    updated_at, md5(sealed_secret || convert_to(config::text, 'UTF8')) AS version
    """

    /// Upsert of one set: a replacement resets the state to `unverified` and clears the invalid
    /// reason; `first_accepted_at` is kept for good (R-APP-3).
    static let upsert = """
    INSERT INTO push_credentials AS c (app_id, kind, config, sealed_secret, key_version, state, updated_at)
    SELECT $1::uuid, $2::text, $3::jsonb, $4::bytea, 1, 'unverified', now()
      FROM push_apps a WHERE a.id = $1::uuid AND a.deleted_at IS NULL
    ON CONFLICT (app_id, kind) DO UPDATE
       SET config = excluded.config, sealed_secret = excluded.sealed_secret,
           state = 'unverified', invalid_reason = NULL, updated_at = now()
    RETURNING \(columns)
    """

    /// The app's push sets and its SMS provider's set (R-SMS-1, `push_sms_credentials`, one per
    /// app), by kind. Primary keys of both tables.
    static let byApp = """
    SELECT \(columns) FROM push_credentials WHERE app_id = $1::uuid
    UNION ALL
    SELECT \(smsColumns) FROM push_sms_credentials WHERE app_id = $1::uuid
    ORDER BY kind
    """

    static let all = "SELECT \(columns) FROM push_credentials ORDER BY app_id, kind FOR UPDATE"

    /// Re-seal in place (key rotation): the state, first acceptance and version-relevant config stay.
    static let reseal = """
    UPDATE push_credentials SET sealed_secret = $3::bytea, key_version = key_version + 1
     WHERE app_id = $1::uuid AND kind = $2::text
    """

    static let delete = "DELETE FROM push_credentials WHERE app_id = $1::uuid AND kind = $2::text"

    // MARK: - SMS provider sets (sql/0012)

    /// `columns` for `push_sms_credentials`, whose `provider` is the set's kind.
    static let smsColumns = """
    app_id, provider AS kind, config::text AS config, sealed_secret, key_version, state, first_accepted_at,
    invalid_reason, updated_at, md5(sealed_secret || convert_to(config::text, 'UTF8')) AS version
    """

    /// As `upsert`: the app's one SMS provider set, replaced whole (state `unverified` again, the
    /// first acceptance kept).
    static let smsUpsert = """
    INSERT INTO push_sms_credentials AS c (app_id, provider, config, sealed_secret, key_version, state, updated_at)
    SELECT $1::uuid, $2::text, $3::jsonb, $4::bytea, 1, 'unverified', now()
      FROM push_apps a WHERE a.id = $1::uuid AND a.deleted_at IS NULL
    ON CONFLICT (app_id) DO UPDATE
       SET provider = excluded.provider, config = excluded.config, sealed_secret = excluded.sealed_secret,
           key_version = 1, state = 'unverified', invalid_reason = NULL, updated_at = now()
    RETURNING \(smsColumns)
    """

    static let smsAll = "SELECT \(smsColumns) FROM push_sms_credentials ORDER BY app_id FOR UPDATE"

    static let smsReseal = """
    UPDATE push_sms_credentials SET sealed_secret = $3::bytea, key_version = key_version + 1
     WHERE app_id = $1::uuid AND provider = $2::text
    """

    static let smsDelete = "DELETE FROM push_sms_credentials WHERE app_id = $1::uuid AND provider = $2::text"

    // MARK: - Provider tokens

    /// Serializes every caller of one cache key until the end of the transaction.
    static let tokenLock = "SELECT pg_advisory_xact_lock(hashtext($1::text))"

    /// The row's sealed token (sql/0007); a row without one (written in clear by a worker before
    /// schema 7) reads as absent.
    static let tokenGet = """
    SELECT sealed_token, extract(epoch FROM issued_at)::bigint AS issued_at, extract(epoch FROM expires_at)::bigint AS expires_at
      FROM push_provider_tokens WHERE cache_key = $1::text AND sealed_token IS NOT NULL
    """

    /// Stores a sealed token; never a token in clear (`token` is cleared).
    static let tokenPut = """
    INSERT INTO push_provider_tokens (cache_key, token, sealed_token, issued_at, expires_at)
    VALUES ($1::text, NULL, $2::bytea, to_timestamp($3::bigint), to_timestamp($4::bigint))
    ON CONFLICT (cache_key) DO UPDATE
       SET token = NULL, sealed_token = excluded.sealed_token, issued_at = excluded.issued_at,
           expires_at = excluded.expires_at
    """

    /// Every sealed token, locked for a key rotation.
    static let tokenAllSealed = """
    SELECT cache_key, sealed_token FROM push_provider_tokens WHERE sealed_token IS NOT NULL ORDER BY cache_key FOR UPDATE
    """

    static let tokenReseal = "UPDATE push_provider_tokens SET sealed_token = $2::bytea WHERE cache_key = $1::text"

    static let tokenDelete = "DELETE FROM push_provider_tokens WHERE cache_key = $1::text"
}
