-- Issue 23 (R-KIND-4): a provider host failing as a whole, or an FCM project's 429 QUOTA_EXCEEDED,
-- pauses sending to it fleet-wide. One row per paused scope ('host <origin>' or
-- 'fcm-project <id>'), shared by every worker. The decisions (when a scope is down, when a probe
-- is due, what a probe's answer does, when a quota pause ends) are PushCore's PauseRules; this
-- table only shares their state. Every change is a compare-and-set on `version`
-- (Sources/PushStore/Queries/PauseQueries.swift): a worker writes version + 1 where the version it
-- read still holds, so two workers never both take a probe and a resume is written once.
--
-- Held-back deliveries are deferred through the queue's existing path (a 'retrying' delivery row
-- with its attempts unchanged and next_attempt_at at the hold's end, carried into the successor
-- batch job by push_record): nothing in the record path changes.
--
-- Expand only: a worker of the previous release never reads this table (it keeps sending, as
-- before, and its failures back off per delivery).

CREATE TABLE push_provider_pauses (
    scope text PRIMARY KEY CHECK (length(scope) BETWEEN 1 AND 300),
    cause text NOT NULL CHECK (cause IN ('connection_failures', 'failure_ratio', 'quota_exceeded')),
    detail text NOT NULL DEFAULT '' CHECK (length(detail) <= 300),
    paused_at timestamptz NOT NULL,
    -- quota pauses: when sending resumes; outages: NULL (a probe's success resumes them)
    resume_at timestamptz,
    probe_interval_s double precision NOT NULL CHECK (probe_interval_s > 0),
    next_probe_at timestamptz NOT NULL,
    -- the worker holding the probe in flight and until when (both NULL: none)
    probe_owner text CHECK (length(probe_owner) <= 200),
    probe_lease_until timestamptz,
    probes int NOT NULL DEFAULT 0 CHECK (probes >= 0),
    version bigint NOT NULL DEFAULT 1,
    updated_at timestamptz NOT NULL DEFAULT now(),
    CHECK ((probe_owner IS NULL) = (probe_lease_until IS NULL))
);

COMMENT ON TABLE push_provider_pauses IS
    'R-KIND-4: scopes (provider hosts, FCM projects) paused fleet-wide; rules in PushCore PauseRules, compare-and-set on version';
