-- The SMS fallback sent for real (issue 20; R-SMS-1, R-SEND-6, R-SEND-9, R-APP-3/4, R-MODE-2):
-- each row of push_sms_outbox (queued by push_finalize_notification, sql/0002, when a
-- notification ends sms_fallback) becomes a row of kind 'sms' of the generic leased outbox
-- (push_outbox, sql/0009), claimed by the worker's SMS dispatcher like webhook deliveries, and
-- handed once to the app's SMS provider (live: Twilio) or to the simulator (test).
--
-- Once: an SMS is marked 'sending' (push_sms_begin, committed) before its request is written; a
-- lease that expires in that state makes it 'unknown' (push_sms_rescue), never sent again, while
-- one that expires before it was marked is simply claimed again. The decisions (retry or not,
-- which status, which error, whether a ledger row is due) are PushCore's (SMSAttemptDecision);
-- push_sms_record applies them.
--
-- Expand-then-contract: push_sms_outbox keeps its columns (phone and text become nullable, so
-- they can be erased with the content); the new columns have defaults, so the previous release's
-- push_finalize_notification goes on inserting rows as before, and a trigger (not a restated
-- function) makes the outbox row whatever path inserted the SMS. Credential sets of SMS providers
-- live in a table of their own, push_sms_credentials: workers of the previous release read every
-- row of push_credentials and would refuse a kind they do not know. push_enqueue is restated with
-- the E.164 check (sql/0011's signature and results unchanged).

-- MARK: - The SMS outbox

ALTER TABLE push_sms_outbox
    ALTER COLUMN phone DROP NOT NULL,
    ALTER COLUMN text DROP NOT NULL,
    -- pending -> sending -> queued | unknown | failed | pending (retry); pending -> failed (no call).
    ADD COLUMN status text NOT NULL DEFAULT 'pending',
    ADD COLUMN provider text,                 -- twilio | simulator
    ADD COLUMN provider_message_id text,      -- Twilio's SID (SM...)
    ADD COLUMN error_code text,               -- SMS_REJECTED, CREDENTIALS_INVALID, EXPIRED, RETRIES_EXHAUSTED
    ADD COLUMN provider_error_code text,      -- the provider's own (Twilio 21211...)
    ADD COLUMN error_detail text,
    ADD COLUMN attempts int NOT NULL DEFAULT 0,   -- requests written (or about to be)
    ADD COLUMN deferrals int NOT NULL DEFAULT 0,  -- 429 / 503 answers so far (backoff without Retry-After)
    ADD COLUMN segments int,                  -- PushCore's SMSSegments, at the first attempt
    ADD COLUMN encoding text,                 -- GSM-7 | UCS-2
    ADD COLUMN request bytea,                 -- test mode: the exact form body it would have sent (R-MODE-2)
    ADD COLUMN updated_at timestamptz NOT NULL DEFAULT now(),
    ADD COLUMN finished_at timestamptz,
    ADD COLUMN content_erased_at timestamptz;
-- Rows written before this release were never sent (nothing sent them): they are pending, and get
-- their outbox row below. `sent_at` (sql/0001) is now the time the provider took the SMS, or may
-- have (queued, unknown).
ALTER TABLE push_sms_outbox
    ADD CONSTRAINT push_sms_outbox_status_check
        CHECK (status IN ('pending', 'sending', 'queued', 'failed', 'unknown')),
    ADD CONSTRAINT push_sms_outbox_final_check
        CHECK ((status IN ('queued', 'failed', 'unknown')) = (finished_at IS NOT NULL)),
    ADD CONSTRAINT push_sms_outbox_erased_check
        CHECK (content_erased_at IS NULL OR (phone IS NULL AND text IS NULL AND request IS NULL));
-- Retention's erasure of final SMS (MaintenanceQueries.eraseFinalSMS).
CREATE INDEX push_sms_outbox_erasable_idx ON push_sms_outbox (finished_at)
    WHERE finished_at IS NOT NULL AND content_erased_at IS NULL;

-- An SMS is a kind of the generic outbox; fair_key is the app (at most N of one app in flight), ref_id
-- the push_sms_outbox row. The wider check holds for every existing row (NOT VALID: no scan under
-- this migration's lock; new rows are checked).
ALTER TABLE push_outbox DROP CONSTRAINT push_outbox_kind_check;
ALTER TABLE push_outbox ADD CONSTRAINT push_outbox_kind_check CHECK (kind IN ('webhook', 'sms')) NOT VALID;
-- Retention's pruning of SMS outbox rows that ended (MaintenanceQueries.pruneFinishedSMSOutbox):
-- the outcome stays on push_sms_outbox, the dispatch state goes. Webhook rows never enter it (they
-- go with their events), and an SMS row enters it once, when it ends.
CREATE INDEX push_outbox_sms_finished_idx ON push_outbox (finished_at)
    WHERE kind = 'sms' AND state IN ('done', 'failed');

-- R-SEND-9, R-SMS-1: each SMS the provider took (or may have) is one ledger row of kind 'sms', on
-- device_id 00000000-0000-0000-0000-000000000000 (no device: one row per notification), mode the
-- notification's (test rows are not billed), reason its status (queued, unknown).
ALTER TABLE push_ledger DROP CONSTRAINT push_ledger_kind_check;
ALTER TABLE push_ledger ADD CONSTRAINT push_ledger_kind_check CHECK (kind IN ('charge', 'refund', 'sms')) NOT VALID;

-- Every SMS queued, by any path (push_finalize_notification of this release or the previous one),
-- gets its outbox row in the same transaction, and the dispatchers are woken at commit.
CREATE FUNCTION push_sms_queued() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO push_outbox (kind, fair_key, ref_id, run_at, created_at)
    VALUES ('sms', NEW.app_id, NEW.id, NEW.created_at, NEW.created_at)
    ON CONFLICT (kind, ref_id, fair_key) DO NOTHING;
    PERFORM pg_notify('pushfleet_sms', '');
    RETURN NULL;
END
$$;
CREATE TRIGGER push_sms_outbox_queued AFTER INSERT ON push_sms_outbox
    FOR EACH ROW EXECUTE FUNCTION push_sms_queued();

INSERT INTO push_outbox (kind, fair_key, ref_id, run_at, created_at)
SELECT 'sms', s.app_id, s.id, now(), s.created_at FROM push_sms_outbox s WHERE s.sent_at IS NULL
ON CONFLICT (kind, ref_id, fair_key) DO NOTHING;

-- MARK: - SMS provider credentials (R-APP-3, R-APP-4)

-- The app's SMS provider set, one per app: `config` holds the identifiers (Twilio: account_sid,
-- api_key_sid, from or messaging_service_sid), `sealed_secret` the auth token or API key secret,
-- sealed by the application (AES-256-GCM, aad <app id>/<provider>) like push_credentials. Live
-- mode only; test mode never reads or writes it.
CREATE TABLE push_sms_credentials (
    app_id              uuid PRIMARY KEY REFERENCES push_apps (id) ON DELETE CASCADE,
    provider            text NOT NULL CHECK (provider IN ('twilio')),
    config              jsonb NOT NULL DEFAULT '{}'::jsonb,
    sealed_secret       bytea NOT NULL,
    key_version         int NOT NULL DEFAULT 1,
    state               text NOT NULL DEFAULT 'unverified' CHECK (state IN ('unverified', 'verified', 'invalid')),
    first_accepted_at   timestamptz,           -- R-APP-3: kept for good once set
    invalid_reason      text,
    updated_at          timestamptz NOT NULL DEFAULT now()
);

-- MARK: - Dispatch (SMSDispatcher, SMSStore)

-- One attempt's outcome as the dispatcher sends it (the elements of push_sms_record's JSON array).
CREATE TYPE push_sms_attempt AS (
    outbox_id            bigint,
    lease_token          uuid,
    status               text,         -- pending (try again at run_at) | queued | failed | unknown
    run_at               timestamptz,
    failed               boolean,      -- a failed attempt of the backoff (connection refused)
    provider             text,
    provider_message_id  text,
    error_code           text,
    provider_error_code  text,
    error_detail         text,
    segments             int,
    encoding             text,
    request              text,         -- test mode: base64 of the form body it would have sent
    deferrals            int,          -- deferrals so far, this one included
    ledger               boolean,      -- write the 'sms' ledger row (PushCore: SMSAttemptDecision.recordsLedgerRow)
    credentials          text,         -- accepted | invalid | NULL (live only)
    credentials_version  text          -- the set the attempt used (CredentialSummary.version)
);

-- push_sms_begin: the SMS of each claimed row whose lease is still held (and not expired) and
-- which is pending becomes 'sending', one more attempt, committed before any request is written.
-- Locks the outbox rows (by id), then the SMS rows: a rescue (push_sms_rescue) meets either the
-- lock or the 'sending' mark. Returns the outbox ids begun; the others must not be sent.
CREATE FUNCTION push_sms_begin(p_outbox_ids bigint[], p_tokens uuid[], p_now timestamptz DEFAULT now())
RETURNS TABLE (outbox_id bigint)
LANGUAGE sql AS $$
    WITH held AS (
        SELECT o.id, o.ref_id FROM push_outbox o
          JOIN unnest(p_outbox_ids, p_tokens) AS u(id, token) ON u.id = o.id
         WHERE o.kind = 'sms' AND o.lease_token = u.token AND o.lease_expires_at > p_now
         ORDER BY o.id
           FOR UPDATE OF o
    ), begun AS (
        UPDATE push_sms_outbox s SET status = 'sending', attempts = s.attempts + 1, updated_at = p_now
          FROM held WHERE s.id = held.ref_id AND s.status = 'pending'
        RETURNING s.id
    )
    SELECT held.id FROM held JOIN begun ON begun.id = held.ref_id
$$;

-- push_sms_record: what the dispatcher learnt, in one round trip. Per attempt: the outbox row's
-- outcome (push_outbox_settle, lease-guarded: a row whose lease was lost is left alone and not
-- returned), the SMS row's new state, its ledger row, and the credential set's state (R-APP-3: the
-- first message taken verifies it for good; a 401 makes it invalid, with push_app.credentials_invalid
-- in the same transaction, R-PRV-4), each only when the set is still the one the attempt used.
-- Locks: outbox rows (settle), SMS rows, credential rows; the ledger rows' foreign key takes a key
-- share on the notification, which only retention's erasure holds (sql/LOCK_ORDER.md).
CREATE FUNCTION push_sms_record(p_attempts json, p_now timestamptz DEFAULT now())
RETURNS TABLE (outbox_id bigint)
LANGUAGE plpgsql AS $$
DECLARE
    v_settled bigint[];
BEGIN
    WITH a AS (
        SELECT x.*, x.ordinality AS ord
          FROM json_populate_recordset(NULL::push_sms_attempt, p_attempts) WITH ORDINALITY AS x
    )
    SELECT array_agg(st.id) INTO v_settled
      FROM push_outbox_settle('sms',
               ARRAY(SELECT a.outbox_id FROM a ORDER BY a.ord), ARRAY(SELECT a.lease_token FROM a ORDER BY a.ord),
               ARRAY(SELECT CASE WHEN a.status = 'pending' THEN 'available' ELSE 'done' END FROM a ORDER BY a.ord),
               ARRAY(SELECT a.run_at FROM a ORDER BY a.ord), ARRAY(SELECT coalesce(a.failed, false) FROM a ORDER BY a.ord),
               ARRAY(SELECT coalesce(a.error_code, CASE WHEN a.status = 'unknown' THEN 'UNKNOWN' END) FROM a ORDER BY a.ord),
               p_now) st;
    IF v_settled IS NULL THEN
        RETURN;
    END IF;

    WITH a AS (
        SELECT x.*, o.ref_id FROM json_populate_recordset(NULL::push_sms_attempt, p_attempts) x
          JOIN push_outbox o ON o.id = x.outbox_id
         WHERE x.outbox_id = ANY (v_settled)
    ), sms AS (
        UPDATE push_sms_outbox s
           SET status = a.status, provider = coalesce(a.provider, s.provider),
               provider_message_id = a.provider_message_id, error_code = a.error_code,
               provider_error_code = a.provider_error_code, error_detail = left(a.error_detail, 500),
               segments = coalesce(a.segments, s.segments), encoding = coalesce(a.encoding, s.encoding),
               request = coalesce(decode(a.request, 'base64'), s.request),
               deferrals = coalesce(a.deferrals, s.deferrals),
               sent_at = CASE WHEN a.status IN ('queued', 'unknown') THEN p_now ELSE s.sent_at END,
               finished_at = CASE WHEN a.status IN ('queued', 'failed', 'unknown') THEN p_now END,
               updated_at = p_now
          FROM a WHERE s.id = a.ref_id
        RETURNING s.id, s.notification_id, s.app_id, s.status, a.ledger, a.credentials, a.credentials_version,
                  a.provider_error_code
    ), ledger AS (
        INSERT INTO push_ledger (notification_id, device_id, kind, app_id, mode, reason)
        SELECT sms.notification_id, '00000000-0000-0000-0000-000000000000', 'sms', sms.app_id, n.mode, sms.status
          FROM sms JOIN push_notifications n ON n.id = sms.notification_id
         WHERE sms.ledger
        ON CONFLICT DO NOTHING
    ), accepted AS (
        UPDATE push_sms_credentials c
           SET state = CASE WHEN c.state = 'unverified' THEN 'verified' ELSE c.state END,
               first_accepted_at = coalesce(c.first_accepted_at, p_now), updated_at = p_now
          FROM (SELECT DISTINCT app_id, credentials_version FROM sms WHERE credentials = 'accepted') x
         WHERE c.app_id = x.app_id AND md5(c.sealed_secret || convert_to(c.config::text, 'UTF8')) = x.credentials_version
    ), bad AS (
        UPDATE push_sms_credentials c
           SET state = 'invalid', invalid_reason = coalesce(x.reason, 'unauthorized'), updated_at = p_now
          FROM (SELECT DISTINCT ON (app_id) app_id, credentials_version, provider_error_code AS reason
                  FROM sms WHERE credentials = 'invalid' ORDER BY app_id) x
         WHERE c.app_id = x.app_id AND c.state <> 'invalid'
           AND md5(c.sealed_secret || convert_to(c.config::text, 'UTF8')) = x.credentials_version
        RETURNING c.app_id, c.provider, c.invalid_reason
    )
    INSERT INTO push_events (app_id, type, payload)
    SELECT bad.app_id, 'push_app.credentials_invalid', jsonb_build_object('kind', bad.provider, 'reason', bad.invalid_reason)
      FROM bad;

    RETURN QUERY SELECT unnest(v_settled);
END
$$;

-- push_sms_rescue: SMS rows whose lease expired (their worker died or lost the database). One that
-- was 'sending' may be with the provider: it becomes 'unknown' (never sent again), with its ledger
-- row, and its outbox row is done. The others were never written: push_outbox_rescue makes them
-- available again at once (their window, 100 years, never ends them here: the SMS deadline,
-- PushCore's, ends them EXPIRED at their next claim).
-- At most p_limit of each, oldest lease first (push_outbox_running_idx). Returns how many became
-- unknown and how many were made available again.
CREATE FUNCTION push_sms_rescue(p_limit int, p_now timestamptz DEFAULT now())
RETURNS TABLE (unknown int, rescued int)
LANGUAGE plpgsql AS $$
DECLARE
    v_unknown int;
BEGIN
    WITH stuck AS (
        SELECT o.id, o.ref_id FROM push_outbox o
         WHERE o.kind = 'sms' AND o.state = 'running' AND o.lease_expires_at < p_now
         ORDER BY o.lease_expires_at
         LIMIT p_limit
           FOR UPDATE SKIP LOCKED
    ), gone AS (
        UPDATE push_sms_outbox s
           SET status = 'unknown', error_detail = 'LEASE_EXPIRED: the request may have been written; not sent again',
               sent_at = p_now, finished_at = p_now, updated_at = p_now
          FROM stuck WHERE s.id = stuck.ref_id AND s.status = 'sending'
        RETURNING s.id, s.notification_id, s.app_id
    ), ledger AS (
        INSERT INTO push_ledger (notification_id, device_id, kind, app_id, mode, reason)
        SELECT gone.notification_id, '00000000-0000-0000-0000-000000000000', 'sms', gone.app_id, n.mode, 'unknown'
          FROM gone JOIN push_notifications n ON n.id = gone.notification_id
        ON CONFLICT DO NOTHING
    ), done AS (
        UPDATE push_outbox o
           SET state = 'done', last_error = 'LEASE_EXPIRED (unknown)', finished_at = p_now,
               lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL
          FROM stuck JOIN gone ON gone.id = stuck.ref_id
         WHERE o.id = stuck.id
        RETURNING o.id
    )
    SELECT count(*) INTO v_unknown FROM done;
    RETURN QUERY SELECT v_unknown,
        (SELECT count(*)::int FROM push_outbox_rescue('sms', 3153600000, p_limit, p_now) r WHERE r.state = 'available');
END
$$;

-- MARK: - Webhook events (R-PRV-4)

-- push_notification.sms_finished (opt-in): an SMS fallback reached its final state, by any path
-- (push_sms_record, push_sms_rescue); written only when an endpoint of the app and mode asked for
-- this type. Never the phone number or the text.
CREATE FUNCTION push_sms_finished_event() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    v_mode text;
BEGIN
    SELECT n.mode INTO v_mode FROM push_notifications n WHERE n.id = NEW.notification_id;
    IF EXISTS (SELECT 1 FROM push_webhook_endpoints ep
                WHERE ep.app_id = NEW.app_id AND ep.mode = v_mode AND ep.enabled
                  AND 'push_notification.sms_finished' = ANY (ep.event_types)) THEN
        INSERT INTO push_events (app_id, type, payload)
        VALUES (NEW.app_id, 'push_notification.sms_finished',
                jsonb_build_object('notification_id', NEW.notification_id, 'mode', v_mode, 'status', NEW.status,
                                   'error_code', NEW.error_code, 'provider_error_code', NEW.provider_error_code,
                                   'provider', NEW.provider, 'provider_message_id', NEW.provider_message_id,
                                   'segments', NEW.segments));
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER push_sms_outbox_finished AFTER UPDATE OF status ON push_sms_outbox
    FOR EACH ROW WHEN (OLD.finished_at IS NULL AND NEW.finished_at IS NOT NULL)
    EXECUTE FUNCTION push_sms_finished_event();

-- push_notification.finished (sql/0009), restated: the event is written when the notification is
-- final, before its SMS fallback is sent, and now says so: `sms` is 'queued' for a notification
-- that ended sms_fallback (its outcome follows in push_notification.sms_finished), null otherwise.
CREATE OR REPLACE FUNCTION push_notification_finished_event() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM push_webhook_endpoints ep
                WHERE ep.app_id = NEW.app_id AND ep.mode = NEW.mode AND ep.enabled
                  AND 'push_notification.finished' = ANY (ep.event_types)) THEN
        INSERT INTO push_events (app_id, type, payload)
        VALUES (NEW.app_id, 'push_notification.finished',
                jsonb_build_object('notification_id', NEW.id, 'mode', NEW.mode, 'status', NEW.status,
                                   'device_count', NEW.device_count, 'error_code', NEW.error_code,
                                   'sms', CASE WHEN NEW.status = 'sms_fallback' THEN 'queued' END));
    END IF;
    RETURN NULL;
END
$$;

-- MARK: - Enqueue (R-SMS-1: the phone is E.164)

-- push_enqueue (sql/0011), restated whole with two changes: the SMS fallback's phone must be an
-- E.164 number (`+`, 8 to 15 digits, the first not 0; PushCore's SMSText.isE164, checked first by
-- PushAcceptance) instead of 1 to 32 characters, and a replay after retention erased the content
-- no longer compares the SMS phone and text (erased with the content now, like the title). The
-- other bounds, the signature (0011's: 0006's 18 parameters, then the kind fields with defaults)
-- and the results are 0011's, so this replaces that function and adds no overload.
CREATE OR REPLACE FUNCTION push_enqueue(
    p_app_id uuid, p_mode text, p_user_ids text[], p_device_ids uuid[],
    p_title text, p_body text, p_data text, p_badge int, p_sound text, p_thread_id text,
    p_collapse_key text, p_priority text, p_send_at timestamptz, p_ttl int,
    p_idempotency_key text, p_sms_phone text, p_sms_text text,
    p_now timestamptz DEFAULT now(),
    p_push_type text DEFAULT NULL, p_interruption_level text DEFAULT NULL, p_relevance_score float8 DEFAULT NULL,
    p_category text DEFAULT NULL, p_target_content_id text DEFAULT NULL, p_critical_sound_name text DEFAULT NULL,
    p_critical_sound_volume float8 DEFAULT NULL, p_title_loc_key text DEFAULT NULL, p_title_loc_args text[] DEFAULT NULL,
    p_body_loc_key text DEFAULT NULL, p_body_loc_args text[] DEFAULT NULL, p_channel_id text DEFAULT NULL)
RETURNS TABLE (notification_id uuid, created boolean)
LANGUAGE plpgsql AS $$
DECLARE
    v_app push_apps;
    v_id uuid;
    v_ttl int := coalesce(p_ttl, 2419200);
    v_priority text := coalesce(p_priority, 'high');
    v_data json;
    v_floor bigint;
    v_bad bigint;
    v_prev push_notifications;
    v_differs text;
    v_push_type text := coalesce(p_push_type, 'alert');
    v_title_loc_args text[] := CASE WHEN cardinality(p_title_loc_args) = 0 THEN NULL ELSE p_title_loc_args END;
    v_body_loc_args text[] := CASE WHEN cardinality(p_body_loc_args) = 0 THEN NULL ELSE p_body_loc_args END;
BEGIN
    IF p_mode IS NULL OR p_mode NOT IN ('test', 'live') THEN
        PERFORM push_refuse('mode', 'must be test or live');
    END IF;
    SELECT * INTO v_app FROM push_apps WHERE id = p_app_id AND deleted_at IS NULL;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'NOT_FOUND: push app % does not exist', p_app_id USING COLUMN = 'app_id';
    END IF;
    IF p_now IS NULL OR NOT isfinite(p_now) THEN
        PERFORM push_refuse('now', 'must be a finite time');
    END IF;

    IF p_user_ids IS NULL OR cardinality(p_user_ids) = 0 THEN
        PERFORM push_refuse('user_ids', 'at least one user is required');
    END IF;
    IF array_ndims(p_user_ids) <> 1 OR cardinality(p_user_ids) > 1000 THEN
        PERFORM push_refuse('user_ids', 'at most 1000 user ids, in a one-dimensional array');
    END IF;
    SELECT min(u.i) - 1 INTO v_bad FROM unnest(p_user_ids) WITH ORDINALITY AS u(id, i)
     WHERE u.id IS NULL OR char_length(u.id) NOT BETWEEN 1 AND 255;
    IF v_bad IS NOT NULL THEN
        PERFORM push_refuse('user_ids', format('element %s (from 0) is not a user id of 1 to 255 characters', v_bad));
    END IF;
    IF p_device_ids IS NOT NULL THEN
        IF cardinality(p_device_ids) = 0 OR array_ndims(p_device_ids) <> 1 OR cardinality(p_device_ids) > 1000 THEN
            PERFORM push_refuse('device_ids', 'when given, 1 to 1000 device ids in a one-dimensional array');
        END IF;
        IF array_position(p_device_ids, NULL) IS NOT NULL THEN
            PERFORM push_refuse('device_ids', 'no element may be null');
        END IF;
    END IF;

    IF p_data IS NOT NULL AND octet_length(p_data) > 65536 THEN
        PERFORM push_refuse('data', 'at most 65536 bytes of JSON text');
    END IF;
    BEGIN
        v_data := p_data::json;
        IF v_data IS NOT NULL AND json_typeof(v_data) = 'object' THEN
            v_floor := push_content_floor(p_title, p_body, v_data);
        ELSE
            v_floor := push_content_floor(p_title, p_body, NULL);
        END IF;
    EXCEPTION WHEN data_exception OR program_limit_exceeded THEN
        -- Never the server's own message: its context quotes the text.
        PERFORM push_refuse('data', 'must be a JSON object (valid JSON, without \u0000)');
    END;
    IF v_data IS NOT NULL AND json_typeof(v_data) <> 'object' THEN
        PERFORM push_refuse('data', 'must be a JSON object');
    END IF;
    v_floor := v_floor + push_loc_text_bytes(p_title_loc_key, v_title_loc_args, p_body_loc_key, v_body_loc_args);
    IF v_floor > 4096 THEN
        RAISE EXCEPTION 'PUSH_PAYLOAD_TOO_LARGE: content is at least % bytes in every payload kind and can never fit in 4096; cut at least % bytes',
            v_floor, v_floor - 4096;
    END IF;

    IF p_badge IS NOT NULL AND p_badge < 0 THEN
        PERFORM push_refuse('badge', 'must be from 0 to 2147483647');
    END IF;
    PERFORM push_check_kind_fields(v_push_type, p_title, p_body, p_badge, p_sound, p_thread_id, p_interruption_level,
        p_relevance_score, p_category, p_target_content_id, p_critical_sound_name, p_critical_sound_volume,
        p_title_loc_key, v_title_loc_args, p_body_loc_key, v_body_loc_args, p_channel_id);
    IF p_collapse_key IS NOT NULL
       AND (octet_length(p_collapse_key) NOT BETWEEN 1 AND 64 OR p_collapse_key ~ '[\u0001-\u001f\u007f]') THEN
        PERFORM push_refuse('collapse_key', 'must be 1 to 64 bytes (R-SEND-13) without control characters');
    END IF;
    IF v_priority NOT IN ('high', 'normal') THEN
        PERFORM push_refuse('priority', 'must be high or normal');
    END IF;
    IF v_ttl < 0 OR v_ttl > 2419200 THEN
        PERFORM push_refuse('ttl', 'must be from 0 to 2419200 seconds');
    END IF;
    IF p_send_at IS NOT NULL AND (NOT isfinite(p_send_at) OR p_send_at > p_now + interval '365 days'
                                  OR p_send_at < p_now - interval '30 days') THEN
        PERFORM push_refuse('send_at', 'must be a finite time from 30 days before to 365 days after acceptance');
    END IF;
    IF p_idempotency_key IS NOT NULL AND char_length(p_idempotency_key) NOT BETWEEN 1 AND 255 THEN
        PERFORM push_refuse('idempotency_key', 'must be 1 to 255 characters');
    END IF;
    IF (p_sms_phone IS NULL) <> (p_sms_text IS NULL) THEN
        PERFORM push_refuse(CASE WHEN p_sms_phone IS NULL THEN 'sms_fallback.phone' ELSE 'sms_fallback.text' END,
                            'an SMS fallback needs both a phone number and a text');
    END IF;
    IF p_sms_phone IS NOT NULL AND p_sms_phone !~ '^\+[1-9][0-9]{7,14}$' THEN
        PERFORM push_refuse('sms_fallback.phone', 'must be an E.164 number: + and 8 to 15 digits, the first not 0');
    END IF;
    IF p_sms_text IS NOT NULL AND char_length(p_sms_text) NOT BETWEEN 1 AND 1600 THEN
        PERFORM push_refuse('sms_fallback.text', 'must be 1 to 1600 characters');
    END IF;

    INSERT INTO push_notifications AS n (app_id, mode, user_ids, device_ids, title, body, data, badge, sound,
        thread_id, collapse_key, priority, ttl_seconds, send_at, accepted_at, expires_at, idempotency_key,
        sms_phone, sms_text, push_type, interruption_level, relevance_score, category, target_content_id,
        critical_sound_name, critical_sound_volume, title_loc_key, title_loc_args, body_loc_key, body_loc_args,
        channel_id)
    VALUES (p_app_id, p_mode, p_user_ids, p_device_ids, p_title, p_body, p_data, p_badge, p_sound,
        p_thread_id, p_collapse_key, v_priority, v_ttl, p_send_at, p_now,
        push_expires_at(p_now, p_send_at, v_ttl), p_idempotency_key, p_sms_phone, p_sms_text, v_push_type,
        p_interruption_level, p_relevance_score, p_category, p_target_content_id, p_critical_sound_name,
        p_critical_sound_volume, p_title_loc_key, v_title_loc_args, p_body_loc_key, v_body_loc_args, p_channel_id)
    ON CONFLICT (app_id, mode, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
    RETURNING n.id INTO v_id;

    IF v_id IS NULL THEN
        -- R-API-5: a replay answers the first notification; other content is refused.
        SELECT * INTO v_prev FROM push_notifications n
         WHERE n.app_id = p_app_id AND n.mode = p_mode AND n.idempotency_key = p_idempotency_key;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'the notification of this idempotency key changed concurrently' USING ERRCODE = '40001';
        END IF;
        v_differs := CASE
            WHEN ARRAY(SELECT DISTINCT u FROM unnest(v_prev.user_ids) u ORDER BY 1)
                 IS DISTINCT FROM ARRAY(SELECT DISTINCT u FROM unnest(p_user_ids) u ORDER BY 1) THEN 'user_ids'
            WHEN (v_prev.device_ids IS NULL) <> (p_device_ids IS NULL)
                 OR ARRAY(SELECT DISTINCT d FROM unnest(v_prev.device_ids) d ORDER BY 1)
                    IS DISTINCT FROM ARRAY(SELECT DISTINCT d FROM unnest(p_device_ids) d ORDER BY 1) THEN 'device_ids'
            WHEN v_prev.content_erased_at IS NULL AND v_prev.title IS DISTINCT FROM p_title THEN 'title'
            WHEN v_prev.content_erased_at IS NULL AND v_prev.body IS DISTINCT FROM p_body THEN 'body'
            WHEN v_prev.content_erased_at IS NULL AND v_prev.data IS DISTINCT FROM p_data THEN 'data'
            WHEN v_prev.badge IS DISTINCT FROM p_badge THEN 'badge'
            WHEN v_prev.content_erased_at IS NULL AND v_prev.sound IS DISTINCT FROM p_sound THEN 'sound'
            WHEN v_prev.content_erased_at IS NULL AND v_prev.thread_id IS DISTINCT FROM p_thread_id THEN 'thread_id'
            WHEN v_prev.collapse_key IS DISTINCT FROM p_collapse_key THEN 'collapse_key'
            WHEN v_prev.priority IS DISTINCT FROM v_priority THEN 'priority'
            WHEN v_prev.ttl_seconds IS DISTINCT FROM v_ttl THEN 'ttl'
            WHEN v_prev.content_erased_at IS NULL AND v_prev.sms_phone IS DISTINCT FROM p_sms_phone THEN 'sms_fallback.phone'
            WHEN v_prev.content_erased_at IS NULL AND v_prev.sms_text IS DISTINCT FROM p_sms_text THEN 'sms_fallback.text'
            WHEN v_prev.push_type IS DISTINCT FROM v_push_type THEN 'push_type'
            WHEN v_prev.interruption_level IS DISTINCT FROM p_interruption_level THEN 'interruption_level'
            WHEN v_prev.relevance_score IS DISTINCT FROM p_relevance_score THEN 'relevance_score'
            WHEN v_prev.content_erased_at IS NULL AND v_prev.category IS DISTINCT FROM p_category THEN 'category'
            WHEN v_prev.content_erased_at IS NULL AND v_prev.target_content_id IS DISTINCT FROM p_target_content_id
                THEN 'target_content_id'
            WHEN v_prev.content_erased_at IS NULL AND v_prev.critical_sound_name IS DISTINCT FROM p_critical_sound_name
                THEN 'critical_sound.name'
            WHEN v_prev.critical_sound_volume IS DISTINCT FROM p_critical_sound_volume THEN 'critical_sound.volume'
            WHEN v_prev.content_erased_at IS NULL AND v_prev.title_loc_key IS DISTINCT FROM p_title_loc_key THEN 'title_loc_key'
            WHEN v_prev.content_erased_at IS NULL AND v_prev.title_loc_args IS DISTINCT FROM v_title_loc_args THEN 'title_loc_args'
            WHEN v_prev.content_erased_at IS NULL AND v_prev.body_loc_key IS DISTINCT FROM p_body_loc_key THEN 'body_loc_key'
            WHEN v_prev.content_erased_at IS NULL AND v_prev.body_loc_args IS DISTINCT FROM v_body_loc_args THEN 'body_loc_args'
            WHEN v_prev.content_erased_at IS NULL AND v_prev.channel_id IS DISTINCT FROM p_channel_id THEN 'channel_id'
        END;
        IF v_differs IS NOT NULL THEN
            RAISE EXCEPTION 'IDEMPOTENCY_KEY_REUSED: the idempotency key was used for notification % with another %',
                v_prev.id, v_differs USING COLUMN = 'idempotency_key';
        END IF;
        RETURN QUERY SELECT v_prev.id, false;
        RETURN;
    END IF;

    -- Acceptance charges (R-SEND-9): what the policy would deliver to now (push_devices_audience_idx).
    INSERT INTO push_ledger (notification_id, device_id, kind, app_id, mode, reason)
    SELECT v_id, d.id, 'charge', p_app_id, p_mode, 'accepted'
      FROM push_devices d
     WHERE d.app_id = p_app_id AND d.mode = p_mode AND d.active AND d.user_id = ANY (p_user_ids)
       AND (p_device_ids IS NULL OR d.id = ANY (p_device_ids))
       AND (d.public_key IS NOT NULL OR d.platform = 'web' OR NOT v_app.require_encryption);

    INSERT INTO push_jobs (kind, notification_id, app_id, run_at)
    VALUES ('notification', v_id, p_app_id, greatest(p_now, coalesce(p_send_at, p_now)));

    PERFORM pg_notify('pushfleet_jobs', '');
    RETURN QUERY SELECT v_id, true;
END
$$;
