-- pushfleet schema, version 1. Expand-then-contract: later migrations only add; a column or table is
-- dropped only in a release after the last worker reading it is gone.
-- Every hot query names its index in a comment (see README "SQL and indexes").

CREATE TABLE push_apps (
    id                  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name                text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
    -- R-APP-1: off by default; read at send time (R-APP-2, R-SEND-2).
    require_encryption  boolean NOT NULL DEFAULT false,
    placeholder_title   text NOT NULL DEFAULT 'New notification',
    placeholder_body    text NOT NULL DEFAULT '',
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    -- Soft delete: queued notifications of a deleted app end as NO_DEVICES with DEVICE_GONE refunds.
    deleted_at          timestamptz
);

-- R-APP-3: credential sets per app, live mode only. Secret material is sealed (AES-256-GCM) by the
-- application under an operator key; `config` holds only non-secret identifiers.
CREATE TABLE push_credentials (
    app_id              uuid NOT NULL REFERENCES push_apps (id) ON DELETE CASCADE,
    kind                text NOT NULL CHECK (kind IN ('apns', 'fcm', 'webpush')),
    config              jsonb NOT NULL DEFAULT '{}'::jsonb,
    sealed_secret       bytea NOT NULL,
    key_version         int NOT NULL DEFAULT 1,
    state               text NOT NULL DEFAULT 'unverified' CHECK (state IN ('unverified', 'verified', 'invalid')),
    first_accepted_at   timestamptz,           -- R-APP-3: kept for good once set
    invalid_reason      text,
    updated_at          timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (app_id, kind)
);

-- R-DEV-1..8. `platform` has no CHECK on purpose: a newer release may add one, and an older worker
-- must then refuse that one delivery (UNKNOWN_PLATFORM), not fail to read the row.
CREATE TABLE push_devices (
    id                   uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    app_id               uuid NOT NULL REFERENCES push_apps (id) ON DELETE CASCADE,
    mode                 text NOT NULL CHECK (mode IN ('test', 'live')),
    platform             text NOT NULL,
    token                text CHECK (token IS NULL OR char_length(token) BETWEEN 1 AND 512),
    endpoint             text,                  -- web: subscription endpoint (RFC 8030)
    p256dh               bytea,                 -- web: subscription key (RFC 8291)
    auth_secret          bytea,                 -- web: 16 bytes
    user_id              text NOT NULL CHECK (char_length(user_id) BETWEEN 1 AND 255),
    apns_environment     text CHECK (apns_environment IN ('sandbox', 'production')),
    public_key           bytea CHECK (public_key IS NULL OR octet_length(public_key) = 65), -- R-DEV-3, never returned
    kid                  text,
    active               boolean NOT NULL DEFAULT true,
    last_registered_at   timestamptz NOT NULL DEFAULT clock_timestamp(), -- R-DEV-5 order, R-DEV-8 ordering
    deactivated_at       timestamptz,
    deactivation_reason  text,
    created_at           timestamptz NOT NULL DEFAULT now(),
    CHECK ((token IS NULL) <> (endpoint IS NULL)),
    CHECK (active = (deactivated_at IS NULL)),
    CHECK ((public_key IS NULL) = (kid IS NULL))
);
-- R-DEV-2 upsert key.
CREATE UNIQUE INDEX push_devices_token_key ON push_devices (app_id, mode, token) WHERE token IS NOT NULL;
CREATE UNIQUE INDEX push_devices_endpoint_key ON push_devices (app_id, mode, endpoint) WHERE endpoint IS NOT NULL;
-- Audience resolution at send time (R-SEND-1) and the per-user limit (R-DEV-5).
CREATE INDEX push_devices_audience_idx ON push_devices (app_id, mode, user_id) WHERE active;
-- Cleanup of devices deactivated more than 30 days ago (R-DEV-7).
CREATE INDEX push_devices_deactivated_idx ON push_devices (deactivated_at) WHERE NOT active;

-- R-DEV-6 without scanning devices: active counts per (app, mode), kept by push_register_device.
CREATE TABLE push_device_counts (
    app_id        uuid NOT NULL REFERENCES push_apps (id) ON DELETE CASCADE,
    mode          text NOT NULL CHECK (mode IN ('test', 'live')),
    active_count  bigint NOT NULL DEFAULT 0 CHECK (active_count >= 0),
    PRIMARY KEY (app_id, mode)
);

CREATE TABLE push_notifications (
    id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    app_id            uuid NOT NULL REFERENCES push_apps (id) ON DELETE CASCADE,
    mode              text NOT NULL CHECK (mode IN ('test', 'live')),
    user_ids          text[] NOT NULL,
    device_ids        uuid[],                 -- optional narrowing (R-SEND-1)
    title             text,
    body              text,
    data              text,                   -- the client's JSON object text, key order kept (R-ENC-9)
    badge             int,
    sound             text,
    thread_id         text,
    collapse_key      text CHECK (collapse_key IS NULL OR octet_length(collapse_key) <= 64), -- R-SEND-13
    priority          text NOT NULL DEFAULT 'high' CHECK (priority IN ('high', 'normal')),    -- R-SEND-10
    ttl_seconds       int NOT NULL DEFAULT 2419200 CHECK (ttl_seconds BETWEEN 0 AND 2419200),
    send_at           timestamptz,
    accepted_at       timestamptz NOT NULL DEFAULT now(),
    expires_at        timestamptz NOT NULL,   -- max(accepted_at, send_at) + ttl (R-SEND-10)
    idempotency_key   text CHECK (idempotency_key IS NULL OR char_length(idempotency_key) BETWEEN 1 AND 255),
    sms_phone         text,
    sms_text          text,
    -- pending -> sending -> sent | sms_fallback | failed; pending -> cancelled.
    status            text NOT NULL DEFAULT 'pending'
                      CHECK (status IN ('pending', 'sending', 'sent', 'sms_fallback', 'failed', 'cancelled')),
    encrypted         boolean,                -- require_encryption read at send time (R-SEND-2)
    started_at        timestamptz,            -- the send time (R-SEND-2)
    remaining_batches int NOT NULL DEFAULT 0 CHECK (remaining_batches >= 0),
    device_count      int NOT NULL DEFAULT 0, -- R-SEND-8/9: deliveries that net one charge
    error_code        text,
    finished_at       timestamptz,
    content_erased_at timestamptz,
    CHECK ((status IN ('sent', 'sms_fallback', 'failed', 'cancelled')) = (finished_at IS NOT NULL)),
    CHECK ((sms_phone IS NULL) = (sms_text IS NULL))
);
-- R-SEND-1: an idempotency key is unique per (app, mode).
CREATE UNIQUE INDEX push_notifications_idempotency_key ON push_notifications (app_id, mode, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX push_notifications_finished_idx ON push_notifications (finished_at) WHERE finished_at IS NOT NULL;

-- The queue. kind 'notification': the send-time step (policy, audience, split); kind 'batch': a
-- device batch (delivery and per-delivery retries).
CREATE TABLE push_jobs (
    id                bigserial PRIMARY KEY,
    kind              text NOT NULL CHECK (kind IN ('notification', 'batch')),
    notification_id   uuid NOT NULL REFERENCES push_notifications (id) ON DELETE CASCADE,
    app_id            uuid NOT NULL,
    device_ids        uuid[],
    -- available -> running -> completed | available (retry) | discarded; available -> cancelled.
    state             text NOT NULL DEFAULT 'available'
                      CHECK (state IN ('available', 'running', 'completed', 'discarded', 'cancelled')),
    priority          smallint NOT NULL DEFAULT 0,
    run_at            timestamptz NOT NULL DEFAULT now(),
    attempt           int NOT NULL DEFAULT 0,
    max_attempts      int NOT NULL DEFAULT 10 CHECK (max_attempts > 0),
    lease_owner       text,
    lease_token       uuid,
    lease_expires_at  timestamptz,
    last_error        text,
    created_at        timestamptz NOT NULL DEFAULT now(),
    finalized_at      timestamptz,
    CHECK ((state IN ('completed', 'discarded', 'cancelled')) = (finalized_at IS NOT NULL)),
    CHECK ((state = 'running') = (lease_token IS NOT NULL AND lease_expires_at IS NOT NULL)),
    CHECK (kind = 'notification' OR device_ids IS NOT NULL)
);
-- The claim (push_jobs_due_idx), lease rescue (push_jobs_lease_idx), per-notification lookups, pruning.
CREATE INDEX push_jobs_due_idx ON push_jobs (priority DESC, run_at, id) WHERE state = 'available';
CREATE INDEX push_jobs_lease_idx ON push_jobs (lease_expires_at) WHERE state = 'running';
CREATE INDEX push_jobs_notification_idx ON push_jobs (notification_id);
CREATE INDEX push_jobs_finalized_idx ON push_jobs (finalized_at) WHERE finalized_at IS NOT NULL;

-- R-SEND-8: one row per (notification, device), carried through its attempts.
CREATE TABLE push_deliveries (
    notification_id      uuid NOT NULL REFERENCES push_notifications (id) ON DELETE CASCADE,
    device_id            uuid NOT NULL,       -- no FK: device rows are deleted after 30 days, history stays (R-DEV-7)
    status               text NOT NULL CHECK (status IN ('retrying', 'sent', 'failed')),
    error_code           text,
    error_detail         text,
    encrypted            boolean NOT NULL DEFAULT false,
    provider             text,
    provider_message_id  text,
    apns_id              uuid NOT NULL,       -- stable across retries (DESIGN guarantees)
    attempts             int NOT NULL DEFAULT 0,   -- provider attempts made, deferrals included
    failures             int NOT NULL DEFAULT 0,   -- attempts that failed transiently (R-SEND-12 backoff)
    next_attempt_at      timestamptz,
    payload              bytea,               -- test mode only: the exact bytes it would have sent (R-MODE-2)
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now(),
    finished_at          timestamptz,
    PRIMARY KEY (notification_id, device_id),
    CHECK ((status = 'retrying') = (next_attempt_at IS NOT NULL)),
    CHECK ((status = 'retrying') = (finished_at IS NULL)),
    CHECK (status <> 'failed' OR error_code IS NOT NULL)
);
CREATE INDEX push_deliveries_finished_idx ON push_deliveries (finished_at) WHERE finished_at IS NOT NULL;

-- R-SEND-9: at most one charge and one refund per (notification, device).
CREATE TABLE push_ledger (
    notification_id  uuid NOT NULL REFERENCES push_notifications (id) ON DELETE CASCADE,
    device_id        uuid NOT NULL,
    kind             text NOT NULL CHECK (kind IN ('charge', 'refund')),
    app_id           uuid NOT NULL,
    mode             text NOT NULL CHECK (mode IN ('test', 'live')),
    reason           text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (notification_id, device_id, kind)
);
CREATE INDEX push_ledger_created_idx ON push_ledger (created_at);

-- Webhook outbox (R-PRV-4): written in the transaction of the change it announces.
CREATE TABLE push_events (
    id            bigserial PRIMARY KEY,
    app_id        uuid NOT NULL,
    type          text NOT NULL,              -- push_device.deactivated, push_app.credentials_invalid, ...
    payload       jsonb NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    delivered_at  timestamptz
);
CREATE INDEX push_events_undelivered_idx ON push_events (id) WHERE delivered_at IS NULL;

-- R-SEND-6: the SMS fallback, once per notification.
CREATE TABLE push_sms_outbox (
    id               bigserial PRIMARY KEY,
    notification_id  uuid NOT NULL UNIQUE REFERENCES push_notifications (id) ON DELETE CASCADE,
    app_id           uuid NOT NULL,
    phone            text NOT NULL,
    text             text NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    sent_at          timestamptz
);

-- Shared provider tokens (APNs JWT per key), so a fleet refreshes them at Apple's pace.
CREATE TABLE push_provider_tokens (
    cache_key    text PRIMARY KEY,
    token        text NOT NULL,
    issued_at    timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL
);

-- Queue metrics for KEDA / postgres_exporter, without a worker.
CREATE VIEW push_queue_stats AS
SELECT
    count(*) FILTER (WHERE state = 'available')                         AS available,
    count(*) FILTER (WHERE state = 'available' AND run_at <= now())     AS due,
    count(*) FILTER (WHERE state = 'running')                           AS running,
    count(*) FILTER (WHERE state = 'discarded')                         AS discarded,
    count(*) FILTER (WHERE state = 'completed')                         AS completed,
    count(*) FILTER (WHERE state = 'cancelled')                         AS cancelled,
    coalesce(extract(epoch FROM now() - min(run_at) FILTER (WHERE state = 'available' AND run_at <= now())), 0)::float8
                                                                         AS oldest_due_age_seconds
FROM push_jobs;
