/// SQL of webhooks (sql/0009): endpoint management (`WebhookEndpointStore`) and dispatch
/// (`WebhookDispatchStore`). Parameterized; each names its index.
enum WebhookQueries {
    /// The endpoint columns every endpoint statement returns (never the secrets), plus its pending
    /// rows (`push_outbox_due_idx` and `push_outbox_running_idx`).
    static let endpointColumns = """
    ep.id, ep.app_id, ep.mode, ep.url, ep.event_types, ep.enabled, ep.disabled_reason, ep.disabled_at,
    ep.previous_secret_expires_at, ep.failing_since, ep.last_success_at, ep.last_failure_at, ep.created_at, ep.updated_at,
    (SELECT count(*) FROM push_outbox o WHERE o.kind = 'webhook' AND o.fair_key = ep.id AND o.state = 'available')
      + (SELECT count(*) FROM push_outbox o WHERE o.kind = 'webhook' AND o.fair_key = ep.id AND o.state = 'running')
      AS pending
    """

    /// `$1` id, `$2` app, `$3` mode, `$4` url, `$5` types, `$6` sealed secret, `$7` per-app-and-mode limit.
    static let endpointCreate = """
    SELECT \(endpointColumns)
      FROM push_webhook_endpoint_create($1::uuid, $2::uuid, $3::text, $4::text, $5::text[], $6::bytea, $7::int) ep
    """

    /// Endpoints of app `$1`, of mode `$2` (or both when NULL), oldest first. `push_webhook_endpoints_app_idx`.
    static let endpointList = """
    SELECT \(endpointColumns) FROM push_webhook_endpoints ep
     WHERE ep.app_id = $1::uuid AND ($2::text IS NULL OR ep.mode = $2::text)
     ORDER BY ep.created_at, ep.id
    """

    /// One endpoint by id (primary key).
    static let endpointGet = "SELECT \(endpointColumns) FROM push_webhook_endpoints ep WHERE ep.id = $1::uuid"

    /// Changes URL `$2` and/or event types `$3` (NULL keeps each) of endpoint `$1`.
    static let endpointUpdate = """
    UPDATE push_webhook_endpoints ep
       SET url = coalesce($2::text, ep.url), event_types = coalesce($3::text[], ep.event_types), updated_at = now()
     WHERE ep.id = $1::uuid
    RETURNING \(endpointColumns)
    """

    /// Enables (`$2` true) or disables (reason `$3`) endpoint `$1` (see `push_webhook_endpoint_set_enabled`).
    static let endpointSetEnabled = """
    SELECT count(*) = 1 AS found FROM push_webhook_endpoint_set_enabled($1::uuid, $2::boolean, $3::text)
    """

    /// Deletes endpoint `$1` with its outbox rows (`push_webhook_endpoint_delete`).
    static let endpointDelete = "SELECT push_webhook_endpoint_delete($1::uuid) AS deleted"

    /// A rotation: the current secret becomes the previous one, signing until `$3`; `$2` is the new one.
    static let endpointRotate = """
    UPDATE push_webhook_endpoints ep
       SET previous_secret_sealed = ep.secret_sealed, previous_secret_expires_at = $3::timestamptz,
           secret_sealed = $2::bytea, updated_at = now()
     WHERE ep.id = $1::uuid
    RETURNING \(endpointColumns)
    """

    /// Every endpoint's sealed secrets, locked for re-sealing under a new operator key.
    static let endpointSecretsForUpdate = """
    SELECT id, secret_sealed, previous_secret_sealed FROM push_webhook_endpoints ORDER BY id FOR UPDATE
    """

    /// Writes re-sealed secrets `$2`, `$3` of endpoint `$1`.
    static let endpointReseal = """
    UPDATE push_webhook_endpoints SET secret_sealed = $2::bytea, previous_secret_sealed = $3::bytea WHERE id = $1::uuid
    """

    /// The last `$4` attempts of endpoint `$1`, or event `$2` (public id), or app `$3`'s endpoints,
    /// newest first. `push_webhook_attempts_endpoint_idx`; by event: `push_events_public_id_key`, push_outbox
    /// (kind, ref_id, fair_key) and the attempts' primary key.
    static let attempts = """
    SELECT a.attempted_at, a.attempt, a.endpoint_id, e.public_id, e.type, a.result, a.status_code, a.error,
           a.duration_ms, a.response
      FROM push_webhook_attempts a
      JOIN push_events e ON e.id = a.event_id
     WHERE ($1::uuid IS NULL OR a.endpoint_id = $1::uuid)
       AND ($2::uuid IS NULL OR a.outbox_id IN (SELECT o.id FROM push_outbox o
                                                  WHERE o.kind = 'webhook'
                                                    AND o.ref_id = (SELECT x.id FROM push_events x WHERE x.public_id = $2::uuid)))
       AND ($3::uuid IS NULL OR a.endpoint_id IN (SELECT ep.id FROM push_webhook_endpoints ep WHERE ep.app_id = $3::uuid))
     ORDER BY a.attempted_at DESC, a.attempt DESC
     LIMIT $4::int
    """

    /// `webhooks resend`: event `$1` (public id) to endpoint `$2` or its final rows (`push_webhook_resend`).
    static let resend = "SELECT push_webhook_resend($1::uuid, $2::uuid) AS queued"

    // MARK: - Dispatch

    /// Claims up to `$2` deliveries for owner `$1` (`push_webhook_claim`: at most `$3` running per
    /// endpoint fleet-wide, turns across endpoints, lease `$4` s, now `$5`), each with its event and
    /// endpoint (either may be gone: then NULL), read after the claim (see the function's comment).
    static let claim = """
    SELECT id, fair_key, attempts, failures, lease_token, window_started_at, public_id, type, payload, created_at, app_id,
           url, mode, enabled, secret_sealed, previous_secret_sealed, previous_secret_expires_at, failing_since
      FROM push_webhook_claim($1::text, $2::int, $3::int, $4::float8, coalesce($5::timestamptz, now()))
    """

    /// Finished attempts (see `push_webhook_record`): parallel arrays `$1`...`$10`, endpoints to
    /// disable `$11` with reasons `$12`. Returns the outbox ids recorded (lease still held).
    static let record = """
    SELECT outbox_id FROM push_webhook_record($1::bigint[], $2::uuid[], $3::text[], $4::timestamptz[], $5::text[],
                                              $6::int[], $7::timestamptz[], $8::int[], $9::text[], $10::boolean[],
                                              $11::uuid[], $12::text[])
    """

    /// Disabled endpoints by reason (the endpoints table is small: per app and mode at most 20).
    static let disabledCounts = """
    SELECT disabled_reason, count(*)::int AS n FROM push_webhook_endpoints WHERE NOT enabled GROUP BY disabled_reason
    """

    /// The `$1` endpoints whose oldest undelivered row is oldest, with its age in seconds
    /// (`push_outbox_due_idx`, `push_outbox_running_idx`).
    static let oldestPending = """
    SELECT fair_key, extract(epoch FROM now() - min(created_at))::float8 AS age
      FROM push_outbox
     WHERE kind = 'webhook' AND state IN ('available', 'running')
     GROUP BY fair_key
     ORDER BY age DESC
     LIMIT $1::int
    """
}

extension WebhookQueries {
    /// Webhook deliveries due now or in flight (`--until-drained`; `push_outbox_due_idx`,
    /// `push_outbox_running_idx`).
    static let dueOrRunning = """
    SELECT (SELECT count(*) FROM push_outbox WHERE kind = 'webhook' AND state = 'available' AND run_at <= now())
         + (SELECT count(*) FROM push_outbox WHERE kind = 'webhook' AND state = 'running') AS n
    """

    /// Finishes events `$1` whose rows are all final (`push_webhook_finish_events`).
    static let finishEvents = "SELECT push_webhook_finish_events($1::bigint[])"
}
