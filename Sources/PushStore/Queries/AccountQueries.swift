/// SQL of accounts, API keys and rate-limit buckets (sql/0008), in one place. Parameterized.
enum AccountQueries {
    static let accountCreate = """
    INSERT INTO push_accounts (name) VALUES ($1::text) RETURNING id, name, is_default, created_at
    """

    static let accountGet = "SELECT id, name, is_default, created_at FROM push_accounts WHERE id = $1::uuid"

    static let keyColumns = """
    id, account_id, mode, name, key_prefix, permissions, rate_limit_per_second, created_at, revoked_at, app_ids
    """

    /// Inserts only when the account exists (no row: NOT_FOUND).
    static let keyCreate = """
    INSERT INTO push_api_keys (account_id, mode, name, key_hash, key_prefix, permissions, rate_limit_per_second, app_ids)
    SELECT a.id, $2::text, $3::text, $4::bytea, $5::text, $6::text, coalesce($7::int, 100), $8::uuid[]
      FROM push_accounts a WHERE a.id = $1::uuid
    RETURNING \(keyColumns)
    """

    /// Which of the apps `$1` are the account `$2`'s and not deleted (primary key): a key is scoped
    /// only to its own account's apps.
    static let ownedApps = """
    SELECT id FROM push_apps WHERE id = ANY($1::uuid[]) AND account_id = $2::uuid AND deleted_at IS NULL
    """

    /// `push_api_keys_account_idx`.
    static let keyList = """
    SELECT \(keyColumns) FROM push_api_keys WHERE account_id = $1::uuid ORDER BY created_at, id
    """

    /// The key's row, locked until the revocation commits (primary key).
    static let keyLockForRevoke = "SELECT revoked_at FROM push_api_keys WHERE id = $1::uuid FOR UPDATE"

    /// Revokes once (the first revocation time is kept) and returns the key either way.
    static let keyRevoke = """
    UPDATE push_api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1::uuid RETURNING \(keyColumns)
    """

    /// The per-request check: the key by its hash (`push_api_keys_hash_key`) and, when the request
    /// names an app (`$2`), whether that app is the key's account's, within the key's apps when it
    /// is scoped to some (issue 15 part 3), and not deleted (primary key).
    static let authenticate = """
    SELECT \(APIKeyedQueries.keyColumns),
           CASE WHEN $2::uuid IS NULL THEN NULL
                ELSE EXISTS (SELECT 1 FROM push_apps a
                              WHERE a.id = $2::uuid AND a.account_id = k.account_id AND a.deleted_at IS NULL
                                AND (k.app_ids IS NULL OR a.id = ANY(k.app_ids))) END AS app_owned
      FROM push_api_keys k WHERE k.key_hash = $1::bytea
    """

    /// Whether the app is the account's (within `$3`, the credential's apps, when not NULL) and not
    /// deleted (primary key): the app check of a request made with an OAuth access token.
    static let appOwned = """
    SELECT EXISTS (SELECT 1 FROM push_apps a WHERE a.id = $1::uuid AND a.account_id = $2::uuid AND a.deleted_at IS NULL
                      AND ($3::uuid[] IS NULL OR a.id = ANY($3::uuid[]))) AS app_owned
    """

    static let takeTokens = """
    SELECT granted, retry_after_seconds FROM push_api_take_tokens($1::uuid, $2::int, $3::float8, $4::float8)
    """
}
