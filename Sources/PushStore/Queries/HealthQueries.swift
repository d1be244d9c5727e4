/// SQL of the worker's readiness probe (`HealthStore`). Both statements are cheap catalog reads.
enum HealthQueries {
    /// Whether `schema_migrations` exists, and whether this session would refuse writes
    /// (`transaction_read_only`: a hot standby, or `default_transaction_read_only = on`).
    static let session = """
    SELECT to_regclass('schema_migrations') IS NOT NULL AS has_migrations,
           current_setting('transaction_read_only') = 'on' AS read_only,
           pg_is_in_recovery() AS in_recovery
    """

    /// The highest applied migration (run only when `schema_migrations` exists).
    static let schemaVersion = "SELECT coalesce(max(version), 0) AS version FROM schema_migrations"
}
