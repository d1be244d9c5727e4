/// SQL of the fleet-wide provider pauses (`push_provider_pauses`, sql/0014, R-KIND-4). The rows
/// hold `PauseRules`' state; every change is a compare-and-set on `version` (the row's primary
/// key, `scope`, finds it: no other index is needed for a table of a few rows).
enum PauseQueries {
    static let columns = """
    scope, cause, detail, paused_at, resume_at, probe_interval_s, next_probe_at, probe_owner, probe_lease_until,
    probes, version
    """

    /// Every pause (a handful of rows at most: one per paused provider host or FCM project).
    static let all = "SELECT \(columns) FROM push_provider_pauses ORDER BY scope"

    /// One scope's pause.
    static let one = "SELECT \(columns) FROM push_provider_pauses WHERE scope = $1::text"

    /// A new pause; when the scope is already paused (another worker came first) the stored row
    /// stays and is answered instead.
    static let insert = """
    WITH ins AS (
        INSERT INTO push_provider_pauses (scope, cause, detail, paused_at, resume_at, probe_interval_s, next_probe_at,
                                          version, updated_at)
        VALUES ($1::text, $2::text, left($3::text, 300), $4::timestamptz, $5::timestamptz, $6::float8, $7::timestamptz,
                1, now())
        ON CONFLICT (scope) DO NOTHING
        RETURNING \(columns), true AS inserted
    )
    SELECT * FROM ins
    UNION ALL
    SELECT \(columns), false AS inserted FROM push_provider_pauses WHERE scope = $1::text AND NOT EXISTS (SELECT 1 FROM ins)
    """

    /// Compare-and-set of one pause to the state PauseRules computed: written only where the
    /// version read (`$11`) still holds; the new version is `$11 + 1`.
    static let update = """
    UPDATE push_provider_pauses
       SET cause = $2::text, detail = left($3::text, 300), resume_at = $4::timestamptz, probe_interval_s = $5::float8,
           next_probe_at = $6::timestamptz, probe_owner = $7::text, probe_lease_until = $8::timestamptz,
           probes = $9::int, version = $11::bigint + 1, updated_at = now(), paused_at = $10::timestamptz
     WHERE scope = $1::text AND version = $11::bigint
    RETURNING \(columns)
    """

    /// The end of a pause, where the version read still holds.
    static let delete = "DELETE FROM push_provider_pauses WHERE scope = $1::text AND version = $2::bigint"
}
