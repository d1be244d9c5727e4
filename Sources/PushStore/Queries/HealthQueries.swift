/// SQL of the worker's readiness probe (`HealthStore`). Both statements are cheap catalog reads.
enum HealthQueries {
    /// Whether `schema_migrations` exists, and whether this session would refuse writes
    /// (`transaction_read_only`: a hot standby, or `default_transaction_read_only = on`).
    static let session = """
    SELECT to_regclass('schema_migrations') IS NOT NULL AS has_migrations,
           current_setting('transaction_read_only') = 'on' AS read_only,
           pg_is_in_recovery() AS in_recovery
    """

    /// The highest applied migration and which of $1 (versions) are not applied, as `1,8` (run only
    /// when `schema_migrations` exists; its primary key answers each probe).
    static let schemaVersion = """
    SELECT coalesce((SELECT max(version) FROM schema_migrations), 0) AS version,
           coalesce((SELECT string_agg(r.v::text, ',' ORDER BY r.v) FROM unnest($1::bigint[]) AS r(v)
                     WHERE NOT EXISTS (SELECT 1 FROM schema_migrations m WHERE m.version = r.v)), '') AS missing
    """
}
