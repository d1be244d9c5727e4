-- Bad input and races (issue 13): every field the API-side functions accept is bounded here, at
-- the storage boundary (R-LIM-1), with a stable code naming the field (`VALIDATION_ERROR: field:
-- why`, the field also in the error's column name, PG_DIAG_COLUMN_NAME) and never the content; a
-- replayed idempotency key with other content is refused (R-API-5); the queue's functions take
-- their row locks in one order (sql/LOCK_ORDER.md). The limits are listed in the README and
-- mirrored, for earlier answers, by PushAcceptance (`AcceptanceLimits`); `FieldBoundsTests` probes
-- each here at its boundary.
--
-- Expand-then-contract: every function keeps its signature and results, so a worker or CLI of the
-- previous release keeps working; the functions added (push_register_device_v2, push_app_create,
-- push_app_update) are new names. Functions are restated whole, as a migration must.

-- MARK: - Helpers

-- push_refuse: raises `VALIDATION_ERROR: <field>: <why>` with the field as the error's column name.
CREATE FUNCTION push_refuse(p_field text, p_why text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'VALIDATION_ERROR: %: %', p_field, p_why USING COLUMN = p_field;
END
$$;

-- push_json_text_bytes: the UTF-8 bytes of `p` written as a JSON string's contents, escaped as
-- every payload writes it (R-ENC-9: `"`, `\` and characters below 0x20; PostgreSQL's JSON output
-- escapes exactly those, to the same lengths). The measure of the fields that travel in clear
-- beside an encrypted iOS payload (R-LIM-1).
CREATE FUNCTION push_json_text_bytes(p text) RETURNS int
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT octet_length(to_json(p)::text) - 2
$$;

-- push_content_floor: a lower bound, in bytes, of the smallest measure any payload kind gives
-- this content (R-SEND-7): FCM plaintext, whose measure is the `data` keys and values (a
-- non-string value as its compact JSON text) plus the `notification` title and body; every other
-- kind measures more. Exact for title, body and string values; for other values, each escape
-- sequence counts one byte and whitespace none, so the bound never exceeds PushCore's measure
-- (`DeliveryPlanner.contentFloorCheck`). Over 4096, no device of any kind can take the content.
CREATE FUNCTION push_content_floor(p_title text, p_body text, p_data json) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(octet_length(p_title), 0)::bigint + coalesce(octet_length(p_body), 0)
         + coalesce((SELECT sum(octet_length(e.key) + CASE json_typeof(e.value)
                                WHEN 'string' THEN octet_length(e.value #>> '{}')
                                ELSE octet_length(regexp_replace(regexp_replace(e.value::text,
                                         '\\u[0-9a-fA-F]{4}|\\.', '.', 'g'), '[[:space:]]', '', 'g'))
                              END)
                       FROM json_each(p_data) e), 0)
$$;

-- MARK: - Enqueue (R-SEND-1, R-SEND-7, R-SEND-9, R-SEND-13, R-LIM-1, R-API-5)

-- push_enqueue: accept one notification. Bounds (R-LIM-1; sizes in UTF-8 bytes unless said):
--   user_ids      1 to 1,000 user ids of 1 to 255 characters each, no null element
--   device_ids    null, or 1 to 1,000 device ids, no null element
--   title, body, data   together at most 4,096 bytes in the smallest payload measure (above);
--                 data is a JSON object of at most 65,536 bytes of text, without \u0000
--   badge         0 to 2,147,483,647
--   sound, thread_id    at most 64 bytes each, as escaped in the JSON payload
--   collapse_key  1 to 64 bytes (R-SEND-13), no control character (it travels in a header)
--   priority      high or normal; ttl 0 to 2,419,200 s
--   send_at       finite, from 30 days before to 365 days after p_now (itself finite)
--   idempotency key 1 to 255 characters; SMS fallback: phone 1 to 32 and text 1 to 1,600
--                 characters, both or neither
-- The exact size rule lives in PushCore and runs before this call (PushAcceptance); this function
-- refuses only content that no payload kind can carry. An idempotency key already used in this
-- app and mode answers its first notification (created = false) when every field but send_at
-- (and p_now) is the same (user and device ids compared as sets; after retention erased the
-- content, only the fields still stored), and IDEMPOTENCY_KEY_REUSED naming the first field that
-- differs otherwise. Charges, in the same transaction, each device the policy would deliver to
-- now; sends one NOTIFY per call (delivered at commit, coalesced per transaction).
CREATE OR REPLACE FUNCTION push_enqueue(
    p_app_id uuid, p_mode text, p_user_ids text[], p_device_ids uuid[],
    p_title text, p_body text, p_data text, p_badge int, p_sound text, p_thread_id text,
    p_collapse_key text, p_priority text, p_send_at timestamptz, p_ttl int,
    p_idempotency_key text, p_sms_phone text, p_sms_text text,
    p_now timestamptz DEFAULT now())
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
    IF v_floor > 4096 THEN
        RAISE EXCEPTION 'PUSH_PAYLOAD_TOO_LARGE: content is at least % bytes in every payload kind and can never fit in 4096; cut at least % bytes',
            v_floor, v_floor - 4096;
    END IF;

    IF p_badge IS NOT NULL AND p_badge < 0 THEN
        PERFORM push_refuse('badge', 'must be from 0 to 2147483647');
    END IF;
    IF p_sound IS NOT NULL AND push_json_text_bytes(p_sound) > 64 THEN
        PERFORM push_refuse('sound', 'at most 64 bytes (UTF-8, as escaped in the JSON payload)');
    END IF;
    IF p_thread_id IS NOT NULL AND push_json_text_bytes(p_thread_id) > 64 THEN
        PERFORM push_refuse('thread_id', 'at most 64 bytes (UTF-8, as escaped in the JSON payload)');
    END IF;
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
    IF p_sms_phone IS NOT NULL AND char_length(p_sms_phone) NOT BETWEEN 1 AND 32 THEN
        PERFORM push_refuse('sms_fallback.phone', 'must be 1 to 32 characters');
    END IF;
    IF p_sms_text IS NOT NULL AND char_length(p_sms_text) NOT BETWEEN 1 AND 1600 THEN
        PERFORM push_refuse('sms_fallback.text', 'must be 1 to 1600 characters');
    END IF;

    INSERT INTO push_notifications AS n (app_id, mode, user_ids, device_ids, title, body, data, badge, sound,
        thread_id, collapse_key, priority, ttl_seconds, send_at, accepted_at, expires_at, idempotency_key,
        sms_phone, sms_text)
    VALUES (p_app_id, p_mode, p_user_ids, p_device_ids, p_title, p_body, p_data, p_badge, p_sound,
        p_thread_id, p_collapse_key, v_priority, v_ttl, p_send_at, p_now,
        push_expires_at(p_now, p_send_at, v_ttl), p_idempotency_key, p_sms_phone, p_sms_text)
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
            WHEN v_prev.sms_phone IS DISTINCT FROM p_sms_phone THEN 'sms_fallback.phone'
            WHEN v_prev.sms_text IS DISTINCT FROM p_sms_text THEN 'sms_fallback.text'
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

-- MARK: - Send time and records, in the lock order of sql/LOCK_ORDER.md

-- push_start_notification, as in 0002, with the lock order: the notification row first (its id read
-- from the job without a lock), then the job with its lease check. (0002 locked the job first, so
-- a push_cancel locking the notification then the job deadlocked with it at the send time.)
-- A job whose notification row is missing raises ORPHANED_JOB (the worker sets it aside at once).
CREATE OR REPLACE FUNCTION push_start_notification(p_job_id bigint, p_lease_token uuid, p_batch_size int,
                                                   p_now timestamptz DEFAULT now())
RETURNS TABLE (inline_device_ids uuid[], batch_jobs int, gone int, encrypted boolean)
LANGUAGE plpgsql AS $$
DECLARE
    v_job push_jobs;
    v_n push_notifications;
    v_app push_apps;
    v_targets uuid[];
    v_gone int;
    v_batches int;
    v_encrypted boolean;
BEGIN
    SELECT * INTO v_n FROM push_notifications
     WHERE id = (SELECT j.notification_id FROM push_jobs j WHERE j.id = p_job_id) FOR UPDATE;
    SELECT * INTO v_job FROM push_jobs
     WHERE id = p_job_id AND lease_token = p_lease_token AND state = 'running' FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'LEASE_LOST: job % is no longer held by this lease', p_job_id;
    END IF;
    IF v_n.id IS NULL THEN
        RAISE EXCEPTION 'ORPHANED_JOB: job % has no notification row', p_job_id;
    END IF;
    IF v_n.status <> 'pending' THEN
        RAISE EXCEPTION 'NOT_PENDING: notification % is %', v_n.id, v_n.status;
    END IF;
    SELECT * INTO v_app FROM push_apps WHERE id = v_n.app_id;
    v_encrypted := coalesce(v_app.require_encryption, false);

    SELECT coalesce(array_agg(d.id ORDER BY d.id), '{}') INTO v_targets
      FROM push_devices d
     WHERE v_app.deleted_at IS NULL
       AND d.app_id = v_n.app_id AND d.mode = v_n.mode AND d.active AND d.user_id = ANY (v_n.user_ids)
       AND (v_n.device_ids IS NULL OR d.id = ANY (v_n.device_ids));

    WITH gone_devices AS (
        SELECT l.device_id FROM push_ledger l
         WHERE l.notification_id = v_n.id AND l.kind = 'charge' AND NOT (l.device_id = ANY (v_targets))
    ), delivered AS (
        INSERT INTO push_deliveries (notification_id, device_id, status, error_code, error_detail, apns_id, finished_at)
        SELECT v_n.id, g.device_id, 'failed', 'DEVICE_GONE',
               'charged at acceptance, no longer targeted at send time', push_apns_id(v_n.id, g.device_id), p_now
          FROM gone_devices g
        ON CONFLICT DO NOTHING
        RETURNING device_id
    )
    INSERT INTO push_ledger (notification_id, device_id, kind, app_id, mode, reason)
    SELECT v_n.id, device_id, 'refund', v_n.app_id, v_n.mode, 'DEVICE_GONE' FROM delivered
    ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS v_gone = ROW_COUNT;

    IF cardinality(v_targets) <= p_batch_size THEN
        v_batches := CASE WHEN cardinality(v_targets) = 0 THEN 0 ELSE 1 END;
        UPDATE push_jobs SET kind = 'batch', device_ids = v_targets WHERE id = p_job_id;
        inline_device_ids := v_targets;
    ELSE
        INSERT INTO push_jobs (kind, notification_id, app_id, device_ids, priority, run_at)
        SELECT 'batch', v_n.id, v_n.app_id, v_targets[g * p_batch_size + 1 : (g + 1) * p_batch_size],
               v_job.priority, p_now
          FROM generate_series(0, (cardinality(v_targets) - 1) / p_batch_size) AS g;
        GET DIAGNOSTICS v_batches = ROW_COUNT;
        UPDATE push_jobs SET state = 'completed', finalized_at = p_now, lease_token = NULL,
                             lease_expires_at = NULL, lease_owner = NULL
         WHERE id = p_job_id;
        inline_device_ids := NULL;
        PERFORM pg_notify('pushfleet_jobs', '');
    END IF;

    UPDATE push_notifications
       SET status = 'sending', encrypted = v_encrypted, started_at = p_now, remaining_batches = v_batches
     WHERE id = v_n.id;
    batch_jobs := v_batches;
    gone := v_gone;
    encrypted := v_encrypted;
    RETURN NEXT;
END
$$;

-- push_lock_record_rows: levels 4 to 6 of the lock order for recording batches, each sorted,
-- before the writes that would otherwise take them in plan order: the devices a verdict may
-- deactivate (by id), their apps' count rows (by app, mode), and the credential rows about to
-- change (by app, kind; `p_invalid_apps`/`p_accepted_apps` give each kind's app). Rows that no
-- write will touch are not locked (an accepted kind whose set is already verified, the common case).
CREATE FUNCTION push_lock_record_rows(p_deactivate_ids uuid[], p_invalid_apps uuid[], p_invalid_kinds text[],
                                      p_accepted_apps uuid[], p_accepted_kinds text[])
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF cardinality(p_deactivate_ids) > 0 THEN
        PERFORM 1 FROM push_devices d WHERE d.id = ANY (p_deactivate_ids) ORDER BY d.id FOR UPDATE;
        PERFORM 1 FROM push_device_counts c
         WHERE (c.app_id, c.mode) IN (SELECT d.app_id, d.mode FROM push_devices d WHERE d.id = ANY (p_deactivate_ids))
         ORDER BY c.app_id, c.mode FOR UPDATE;
    END IF;
    IF cardinality(p_invalid_kinds) > 0 OR cardinality(p_accepted_kinds) > 0 THEN
        PERFORM 1 FROM push_credentials c
         WHERE (c.state <> 'invalid'
                AND (c.app_id, c.kind) IN (SELECT * FROM unnest(p_invalid_apps, p_invalid_kinds)))
            OR ((c.first_accepted_at IS NULL OR c.state = 'unverified')
                AND (c.app_id, c.kind) IN (SELECT * FROM unnest(p_accepted_apps, p_accepted_kinds)))
         ORDER BY c.app_id, c.kind FOR UPDATE;
    END IF;
END
$$;

-- push_record_batch, as in 0005, with the lock order: the notification row, then the job with its
-- lease check, then push_lock_record_rows for this batch. (0005 locked the job first and the rest
-- in plan order.) Same signature and results. A job without a notification row: ORPHANED_JOB.
CREATE OR REPLACE FUNCTION push_record_batch(
    p_job_id bigint, p_lease_token uuid,
    p_device_ids uuid[], p_statuses text[], p_error_codes text[], p_error_details text[],
    p_encrypted boolean[], p_providers text[], p_message_ids text[], p_attempts int[], p_failures int[],
    p_next_attempt_at timestamptz[], p_payloads bytea[], p_nets_charge boolean[],
    p_deactivate_reasons text[], p_verdict_at timestamptz[],
    p_invalid_credentials text[], p_invalid_reasons text[], p_accepted_credentials text[],
    p_now timestamptz DEFAULT now())
RETURNS TABLE (remaining_batches int, deactivated int, endings text[], has_sms boolean)
LANGUAGE plpgsql AS $$
DECLARE
    v_job push_jobs;
    v_n push_notifications;
    v_retry_at timestamptz;
    v_retry_ids uuid[];
    v_deactivated int := 0;
    v_remaining int;
BEGIN
    SELECT * INTO v_n FROM push_notifications
     WHERE id = (SELECT j.notification_id FROM push_jobs j WHERE j.id = p_job_id) FOR UPDATE;
    SELECT * INTO v_job FROM push_jobs
     WHERE id = p_job_id AND lease_token = p_lease_token AND state = 'running' FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'LEASE_LOST: job % is no longer held by this lease', p_job_id;
    END IF;
    IF v_n.id IS NULL THEN
        RAISE EXCEPTION 'ORPHANED_JOB: job % has no notification row', p_job_id;
    END IF;
    PERFORM push_lock_record_rows(
        ARRAY(SELECT u.id FROM unnest(p_device_ids, p_deactivate_reasons) AS u(id, reason) WHERE u.reason IS NOT NULL),
        array_fill(v_n.app_id, ARRAY[coalesce(cardinality(p_invalid_credentials), 0)]), coalesce(p_invalid_credentials, '{}'),
        array_fill(v_n.app_id, ARRAY[coalesce(cardinality(p_accepted_credentials), 0)]), coalesce(p_accepted_credentials, '{}'));

    -- One statement: every part reads the same batch rows (r) and the same snapshot.
    WITH r AS (
        SELECT * FROM unnest(p_device_ids, p_statuses, p_error_codes, p_error_details, p_encrypted, p_providers,
                             p_message_ids, p_attempts, p_failures, p_next_attempt_at, p_payloads, p_nets_charge,
                             p_deactivate_reasons, p_verdict_at)
            AS u(device_id, status, error_code, error_detail, encrypted, provider, message_id, attempts, failures,
                 next_attempt_at, payload, nets_charge, deactivate_reason, verdict_at)
    ), delivered AS (
        INSERT INTO push_deliveries AS del (notification_id, device_id, status, error_code, error_detail, encrypted,
            provider, provider_message_id, apns_id, attempts, failures, next_attempt_at, payload, updated_at, finished_at)
        SELECT v_n.id, r.device_id, r.status, r.error_code, left(r.error_detail, 500), coalesce(r.encrypted, false),
               r.provider, r.message_id, push_apns_id(v_n.id, r.device_id), r.attempts, coalesce(r.failures, 0),
               CASE WHEN r.status = 'retrying' THEN r.next_attempt_at END, r.payload, p_now,
               CASE WHEN r.status = 'retrying' THEN NULL ELSE p_now END
          FROM r
        ON CONFLICT (notification_id, device_id) DO UPDATE
           SET status = excluded.status, error_code = excluded.error_code, error_detail = excluded.error_detail,
               encrypted = excluded.encrypted, provider = excluded.provider,
               provider_message_id = excluded.provider_message_id, attempts = excluded.attempts,
               failures = excluded.failures,
               next_attempt_at = excluded.next_attempt_at, payload = excluded.payload,
               updated_at = excluded.updated_at, finished_at = excluded.finished_at
         WHERE del.status = 'retrying'
        RETURNING 1
    ), charged AS (
        -- R-SEND-9: a missing charge for what nets one ...
        INSERT INTO push_ledger (notification_id, device_id, kind, app_id, mode, reason)
        SELECT v_n.id, r.device_id, 'charge', v_n.app_id, v_n.mode, coalesce(r.error_code, 'sent')
          FROM r WHERE r.nets_charge
        ON CONFLICT DO NOTHING
        RETURNING 1
    ), refunded AS (
        -- ... and a refund of the acceptance charge for what nets zero.
        INSERT INTO push_ledger (notification_id, device_id, kind, app_id, mode, reason)
        SELECT v_n.id, r.device_id, 'refund', v_n.app_id, v_n.mode, r.error_code
          FROM r
          -- LIMIT keeps the subquery a probe per row (an EXISTS would be planned as a join again).
          JOIN LATERAL (SELECT 1 FROM push_ledger c
                         WHERE c.notification_id = v_n.id AND c.device_id = r.device_id AND c.kind = 'charge'
                         LIMIT 1) charge ON true
         WHERE r.nets_charge = false
        ON CONFLICT DO NOTHING
        RETURNING 1
    ), off AS (
        -- R-PRV-1/2 with R-DEV-8 ordering: a verdict older than the last registration is ignored.
        UPDATE push_devices d
           SET active = false, deactivated_at = p_now, deactivation_reason = r.deactivate_reason
          FROM r
         WHERE r.deactivate_reason IS NOT NULL AND d.id = r.device_id AND d.active
           AND d.last_registered_at < coalesce(r.verdict_at, p_now)
        RETURNING d.id, d.app_id, d.mode, d.user_id, d.deactivation_reason
    ), counted AS (
        UPDATE push_device_counts c SET active_count = greatest(c.active_count - o.n, 0)
          FROM (SELECT app_id, mode, count(*) AS n FROM off GROUP BY app_id, mode) o
         WHERE c.app_id = o.app_id AND c.mode = o.mode
        RETURNING 1
    ), events AS (
        -- R-PRV-4: the event is written by the transaction that makes the change.
        INSERT INTO push_events (app_id, type, payload)
        SELECT off.app_id, 'push_device.deactivated',
               jsonb_build_object('device_id', off.id, 'user_id', off.user_id, 'mode', off.mode,
                                  'reason', off.deactivation_reason, 'notification_id', v_n.id)
          FROM off
        RETURNING 1
    )
    SELECT count(*) INTO v_deactivated FROM events;

    WITH bad AS (
        UPDATE push_credentials c SET state = 'invalid', invalid_reason = r.reason, updated_at = p_now
          FROM unnest(p_invalid_credentials, p_invalid_reasons) AS r(kind, reason)
         WHERE c.app_id = v_n.app_id AND c.kind = r.kind AND c.state <> 'invalid'
        RETURNING c.app_id, c.kind, c.invalid_reason
    )
    INSERT INTO push_events (app_id, type, payload)
    SELECT app_id, 'push_app.credentials_invalid', jsonb_build_object('kind', kind, 'reason', invalid_reason)
      FROM bad;
    UPDATE push_credentials c
       SET state = CASE WHEN c.state = 'unverified' THEN 'verified' ELSE c.state END,
           first_accepted_at = coalesce(c.first_accepted_at, p_now), updated_at = p_now
     WHERE c.app_id = v_n.app_id AND c.kind = ANY (p_accepted_credentials)
       AND (c.first_accepted_at IS NULL OR c.state = 'unverified');

    SELECT min(u.at), array_agg(u.id ORDER BY u.id) INTO v_retry_at, v_retry_ids
      FROM unnest(p_device_ids, p_statuses, p_next_attempt_at) AS u(id, status, at) WHERE u.status = 'retrying';
    IF v_retry_ids IS NOT NULL THEN
        INSERT INTO push_jobs (kind, notification_id, app_id, device_ids, priority, run_at)
        VALUES ('batch', v_n.id, v_n.app_id, v_retry_ids, v_job.priority, v_retry_at);
        v_remaining := v_n.remaining_batches;
    ELSE
        v_remaining := greatest(v_n.remaining_batches - 1, 0);
        UPDATE push_notifications SET remaining_batches = v_remaining WHERE id = v_n.id;
    END IF;

    UPDATE push_jobs SET state = 'completed', finalized_at = p_now, lease_token = NULL,
                         lease_expires_at = NULL, lease_owner = NULL
     WHERE id = p_job_id;

    remaining_batches := v_remaining;
    deactivated := v_deactivated;
    IF v_remaining = 0 THEN
        SELECT coalesce(array_agg(CASE WHEN d.status = 'sent' THEN 'sent' ELSE d.error_code END), '{}')
          INTO endings FROM push_deliveries d WHERE d.notification_id = v_n.id;
    END IF;
    has_sms := v_n.sms_phone IS NOT NULL;
    RETURN NEXT;
END
$$;

-- push_record_batches, as in 0004, taking every lock of the call first, in the lock order: all its
-- jobs' notification rows (by id), all its job rows (by id), then push_lock_record_rows for every
-- record of the call. (0004 took them job after job, so two workers recording overlapping
-- notifications, or a worker's lease heartbeat and its own record, could deadlock.) The per-job
-- calls then find their rows already locked. Same signature and results.
CREATE OR REPLACE FUNCTION push_record_batches(
    p_job_ids bigint[], p_lease_tokens uuid[], p_job_counts int[],
    p_device_ids uuid[], p_statuses text[], p_error_codes text[], p_error_details text[],
    p_encrypted boolean[], p_providers text[], p_message_ids text[], p_attempts int[], p_failures int[],
    p_next_attempt_at timestamptz[], p_payloads bytea[], p_nets_charge boolean[],
    p_deactivate_reasons text[], p_verdict_at timestamptz[],
    p_invalid_job_index int[], p_invalid_credentials text[], p_invalid_reasons text[],
    p_accepted_job_index int[], p_accepted_credentials text[],
    p_now timestamptz DEFAULT now())
RETURNS TABLE (job_id bigint, remaining_batches int, deactivated int, endings text[], has_sms boolean)
LANGUAGE plpgsql AS $$
DECLARE
    i int;
    lo int;
    hi int := 0;
    a_device_ids uuid[]; a_statuses text[]; a_error_codes text[]; a_error_details text[]; a_encrypted boolean[];
    a_providers text[]; a_message_ids text[]; a_attempts int[]; a_failures int[]; a_next timestamptz[];
    a_payloads bytea[]; a_nets boolean[]; a_reasons text[]; a_verdicts timestamptz[];
    a_invalid text[]; a_invalid_reasons text[]; a_accepted text[];
BEGIN
    PERFORM 1 FROM push_notifications n
     WHERE n.id IN (SELECT j.notification_id FROM push_jobs j WHERE j.id = ANY (p_job_ids))
     ORDER BY n.id FOR UPDATE;
    PERFORM 1 FROM push_jobs j WHERE j.id = ANY (p_job_ids) ORDER BY j.id FOR UPDATE;
    PERFORM push_lock_record_rows(
        ARRAY(SELECT u.id FROM unnest(p_device_ids, p_deactivate_reasons) AS u(id, reason) WHERE u.reason IS NOT NULL),
        ARRAY(SELECT j.app_id FROM unnest(p_invalid_job_index) WITH ORDINALITY AS c(job, n)
                JOIN push_jobs j ON j.id = p_job_ids[c.job] ORDER BY c.n),
        coalesce(p_invalid_credentials, '{}'),
        ARRAY(SELECT j.app_id FROM unnest(p_accepted_job_index) WITH ORDINALITY AS c(job, n)
                JOIN push_jobs j ON j.id = p_job_ids[c.job] ORDER BY c.n),
        coalesce(p_accepted_credentials, '{}'));

    FOR i IN 1 .. coalesce(cardinality(p_job_ids), 0) LOOP
        lo := hi + 1;
        hi := hi + p_job_counts[i];
        a_device_ids := coalesce(p_device_ids[lo:hi], '{}'); a_statuses := coalesce(p_statuses[lo:hi], '{}');
        a_error_codes := coalesce(p_error_codes[lo:hi], '{}'); a_error_details := coalesce(p_error_details[lo:hi], '{}');
        a_encrypted := coalesce(p_encrypted[lo:hi], '{}'); a_providers := coalesce(p_providers[lo:hi], '{}');
        a_message_ids := coalesce(p_message_ids[lo:hi], '{}'); a_attempts := coalesce(p_attempts[lo:hi], '{}');
        a_failures := coalesce(p_failures[lo:hi], '{}'); a_next := coalesce(p_next_attempt_at[lo:hi], '{}');
        a_payloads := coalesce(p_payloads[lo:hi], '{}'); a_nets := coalesce(p_nets_charge[lo:hi], '{}');
        a_reasons := coalesce(p_deactivate_reasons[lo:hi], '{}'); a_verdicts := coalesce(p_verdict_at[lo:hi], '{}');
        SELECT coalesce(array_agg(c.kind ORDER BY c.n), '{}'), coalesce(array_agg(c.reason ORDER BY c.n), '{}')
          INTO a_invalid, a_invalid_reasons
          FROM unnest(p_invalid_job_index, p_invalid_credentials, p_invalid_reasons) WITH ORDINALITY AS c(job, kind, reason, n)
         WHERE c.job = i;
        SELECT coalesce(array_agg(c.kind ORDER BY c.n), '{}') INTO a_accepted
          FROM unnest(p_accepted_job_index, p_accepted_credentials) WITH ORDINALITY AS c(job, kind, n)
         WHERE c.job = i;
        RETURN QUERY
            SELECT p_job_ids[i], r.remaining_batches, r.deactivated, r.endings, r.has_sms
              FROM push_record_batch(p_job_ids[i], p_lease_tokens[i], a_device_ids, a_statuses, a_error_codes,
                                     a_error_details, a_encrypted, a_providers, a_message_ids, a_attempts, a_failures,
                                     a_next, a_payloads, a_nets, a_reasons, a_verdicts, a_invalid, a_invalid_reasons,
                                     a_accepted, p_now) AS r;
    END LOOP;
END
$$;

-- MARK: - Devices (R-DEV-1..8, R-LIM-1)

-- push_register_device_v2: push_register_device (0003) with every field bounded here and the
-- device as stored in the answer (for the API's 200). Bounds (R-DEV-1, R-DEV-3): platform ios,
-- android or web; token (ios, android) 1 to 512 characters of A-Z a-z 0-9 _ : . -; web: an https
-- endpoint of at most 2,048 bytes, p256dh a 65-byte uncompressed point, auth 16 bytes, no token,
-- no encryption key; user_id 1 to 255 characters; apns_environment sandbox or production for iOS
-- and absent otherwise; a key set is 65 bytes starting 0x04 with a 16-character kid. (PushCore
-- checks more before this call: the key on the curve, the endpoint's host.) The rest is 0003's
-- upsert, limits and lock order (sql/LOCK_ORDER.md).
CREATE FUNCTION push_register_device_v2(
    p_app_id uuid, p_mode text, p_platform text, p_token text, p_endpoint text, p_p256dh bytea,
    p_auth_secret bytea, p_user_id text, p_apns_environment text, p_key_action text,
    p_public_key bytea, p_kid text, p_app_limit bigint DEFAULT NULL, p_user_limit int DEFAULT 20)
RETURNS TABLE (device_id uuid, created boolean, reactivated boolean, evicted uuid[], app_id uuid, platform text,
               user_id text, apns_environment text, active boolean, kid text, created_at timestamptz,
               last_registered_at timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_dev push_devices;
    v_app_limit bigint := coalesce(p_app_limit, CASE WHEN p_mode = 'live' THEN 1000000 ELSE 1000 END);
    v_user_limit int := coalesce(p_user_limit, 20);
    v_created boolean := false;
    v_reactivated boolean := false;
    v_evicted uuid[];
    v_delta bigint;
    v_counted boolean := false;
    v_count bigint;
BEGIN
    IF p_mode IS NULL OR p_mode NOT IN ('test', 'live') THEN
        PERFORM push_refuse('mode', 'must be test or live');
    END IF;
    IF p_platform IS NULL OR p_platform NOT IN ('ios', 'android', 'web') THEN
        PERFORM push_refuse('platform', 'must be ios, android or web');
    END IF;
    IF p_key_action IS NULL OR p_key_action NOT IN ('keep', 'set', 'remove') THEN
        PERFORM push_refuse('encryption_public_key', 'key action must be keep, set or remove');
    END IF;
    IF p_user_id IS NULL OR char_length(p_user_id) NOT BETWEEN 1 AND 255 THEN
        PERFORM push_refuse('user_id', 'must be 1 to 255 characters');
    END IF;
    IF p_platform = 'web' THEN
        IF p_token IS NOT NULL THEN
            PERFORM push_refuse('token', 'web devices register a subscription, not a token');
        END IF;
        IF p_endpoint IS NULL OR octet_length(p_endpoint) > 2048 OR p_endpoint !~ '^https://[^[:space:][:cntrl:]]+$' THEN
            PERFORM push_refuse('subscription.endpoint', 'must be an https URL of at most 2048 bytes');
        END IF;
        IF p_p256dh IS NULL OR octet_length(p_p256dh) <> 65 OR get_byte(p_p256dh, 0) <> 4 THEN
            PERFORM push_refuse('subscription.keys.p256dh', 'must be a 65-byte uncompressed P-256 point');
        END IF;
        IF p_auth_secret IS NULL OR octet_length(p_auth_secret) <> 16 THEN
            PERFORM push_refuse('subscription.keys.auth', 'must be 16 bytes');
        END IF;
        IF p_key_action = 'set' THEN
            PERFORM push_refuse('encryption_public_key', 'web devices take no encryption key (RFC 8291 protects them)');
        END IF;
    ELSE
        IF p_endpoint IS NOT NULL OR p_p256dh IS NOT NULL OR p_auth_secret IS NOT NULL THEN
            PERFORM push_refuse('subscription', 'applies to web devices only');
        END IF;
        IF p_token IS NULL OR char_length(p_token) > 512 OR p_token !~ '^[A-Za-z0-9_:.-]+$' THEN
            PERFORM push_refuse('token', 'must be 1 to 512 characters of A-Z a-z 0-9 _ : . -');
        END IF;
    END IF;
    IF p_platform = 'ios' AND (p_apns_environment IS NULL OR p_apns_environment NOT IN ('sandbox', 'production')) THEN
        PERFORM push_refuse('apns_environment', 'must be sandbox or production for an iOS device');
    END IF;
    IF p_platform <> 'ios' AND p_apns_environment IS NOT NULL THEN
        PERFORM push_refuse('apns_environment', 'applies to iOS devices only');
    END IF;
    IF p_key_action = 'set' AND (p_public_key IS NULL OR octet_length(p_public_key) <> 65
                                 OR get_byte(p_public_key, 0) <> 4 OR p_kid IS NULL OR char_length(p_kid) <> 16) THEN
        PERFORM push_refuse('encryption_public_key', 'must be a 65-byte uncompressed P-256 point, with its 16-character kid');
    END IF;
    IF v_user_limit < 1 THEN
        PERFORM push_refuse('user_limit', 'the per-user device limit must be at least 1');
    END IF;
    PERFORM 1 FROM push_apps a WHERE a.id = p_app_id AND a.deleted_at IS NULL;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'NOT_FOUND: push app % does not exist', p_app_id USING COLUMN = 'app_id';
    END IF;
    -- One user's registrations in turn (R-DEV-5): every device joining a user's active set does so
    -- under this lock, so the eviction below sees all of them.
    PERFORM pg_advisory_xact_lock(hashtextextended(p_app_id::text || '/' || p_mode || '/' || p_user_id, 0));

    -- The device row, locked: the existing one, or a new one. Two registrations of one new token
    -- race on the unique index; the loser's INSERT does nothing and its next SELECT finds the
    -- winner's row. Bounded: a conflicting row that vanished again (cleanup) costs one more turn.
    FOR attempt IN 1..3 LOOP
        IF p_token IS NOT NULL THEN
            SELECT * INTO v_dev FROM push_devices d
             WHERE d.app_id = p_app_id AND d.mode = p_mode AND d.token = p_token FOR UPDATE;
        ELSE
            SELECT * INTO v_dev FROM push_devices d
             WHERE d.app_id = p_app_id AND d.mode = p_mode AND d.endpoint = p_endpoint FOR UPDATE;
        END IF;
        EXIT WHEN FOUND;
        INSERT INTO push_devices AS d (app_id, mode, platform, token, endpoint, p256dh, auth_secret, user_id,
                                       apns_environment, public_key, kid, last_registered_at)
        VALUES (p_app_id, p_mode, p_platform, p_token, p_endpoint, p_p256dh, p_auth_secret, p_user_id,
                p_apns_environment,
                CASE WHEN p_key_action = 'set' THEN p_public_key END,
                CASE WHEN p_key_action = 'set' THEN p_kid END, clock_timestamp())
        ON CONFLICT DO NOTHING
        RETURNING * INTO v_dev;
        IF FOUND THEN
            v_created := true;
            EXIT;
        END IF;
    END LOOP;
    IF v_dev.id IS NULL THEN
        RAISE EXCEPTION 'could not register device: its row kept changing concurrently'
            USING ERRCODE = '40001';
    END IF;

    IF NOT v_created THEN
        v_reactivated := NOT v_dev.active;
        UPDATE push_devices d SET
            platform = p_platform, user_id = p_user_id, apns_environment = p_apns_environment,
            p256dh = p_p256dh, auth_secret = p_auth_secret,
            public_key = CASE p_key_action WHEN 'set' THEN p_public_key WHEN 'remove' THEN NULL ELSE d.public_key END,
            kid = CASE p_key_action WHEN 'set' THEN p_kid WHEN 'remove' THEN NULL ELSE d.kid END,
            active = true, deactivated_at = NULL, deactivation_reason = NULL,
            last_registered_at = greatest(d.last_registered_at, clock_timestamp())
         WHERE d.id = v_dev.id
        RETURNING * INTO v_dev;
    END IF;

    -- R-DEV-5: besides this device, keep the user's (limit - 1) most recently registered active
    -- devices. The UPDATE re-checks each row, so one deactivated or moved away meanwhile is skipped.
    WITH extra AS (
        SELECT d.id FROM push_devices d
         WHERE d.app_id = p_app_id AND d.mode = p_mode AND d.user_id = p_user_id AND d.active
           AND d.id <> v_dev.id
         ORDER BY d.last_registered_at DESC, d.id DESC
        OFFSET v_user_limit - 1
    ), off AS (
        UPDATE push_devices d SET active = false, deactivated_at = clock_timestamp(), deactivation_reason = 'DEVICE_LIMIT'
          FROM extra
         WHERE d.id = extra.id AND d.active AND d.app_id = p_app_id AND d.mode = p_mode AND d.user_id = p_user_id
        RETURNING d.id, d.user_id
    ), ev AS (
        INSERT INTO push_events (app_id, type, payload)
        SELECT p_app_id, 'push_device.deactivated',
               jsonb_build_object('device_id', off.id, 'user_id', off.user_id, 'mode', p_mode, 'reason', 'DEVICE_LIMIT')
          FROM off
        RETURNING (payload ->> 'device_id')::uuid AS id
    )
    SELECT array_agg(ev.id) INTO v_evicted FROM ev;

    -- The app's active count (R-DEV-6), kept in push_device_counts so nothing scans devices.
    v_delta := CASE WHEN v_created OR v_reactivated THEN 1 ELSE 0 END - coalesce(cardinality(v_evicted), 0);
    IF v_created OR v_reactivated THEN
        -- The limit is judged on the count before this registration; the row lock taken here makes
        -- parallel registrations at the limit take their turns.
        FOR attempt IN 1..2 LOOP
            UPDATE push_device_counts c SET active_count = greatest(c.active_count + v_delta, 0)
             WHERE c.app_id = p_app_id AND c.mode = p_mode AND c.active_count < v_app_limit;
            IF FOUND THEN
                v_counted := true;
                EXIT;
            END IF;
            PERFORM 1 FROM push_device_counts c WHERE c.app_id = p_app_id AND c.mode = p_mode;
            EXIT WHEN FOUND OR v_app_limit < 1;
            -- The app's first device in this mode: no count row yet.
            INSERT INTO push_device_counts AS c (app_id, mode, active_count)
            VALUES (p_app_id, p_mode, greatest(v_delta, 0))
            ON CONFLICT DO NOTHING;
            IF FOUND THEN
                v_counted := true;
                EXIT;
            END IF;
        END LOOP;
        IF NOT v_counted THEN
            SELECT c.active_count INTO v_count FROM push_device_counts c WHERE c.app_id = p_app_id AND c.mode = p_mode;
            RAISE EXCEPTION 'PUSH_DEVICE_LIMIT: the app has % active % devices, its limit is %',
                coalesce(v_count, 0), p_mode, v_app_limit;
        END IF;
    ELSIF v_delta <> 0 THEN
        UPDATE push_device_counts c SET active_count = greatest(c.active_count + v_delta, 0)
         WHERE c.app_id = p_app_id AND c.mode = p_mode;
    END IF;

    RETURN QUERY SELECT v_dev.id, v_created, v_reactivated, coalesce(v_evicted, '{}'), v_dev.app_id, v_dev.platform,
                        v_dev.user_id, v_dev.apns_environment, v_dev.active, v_dev.kid, v_dev.created_at,
                        v_dev.last_registered_at;
END
$$;

-- push_register_device (0003), for the previous release's callers: the same registration, now
-- through push_register_device_v2 and its bounds. Same signature and results.
CREATE OR REPLACE FUNCTION push_register_device(
    p_app_id uuid, p_mode text, p_platform text, p_token text, p_endpoint text, p_p256dh bytea,
    p_auth_secret bytea, p_user_id text, p_apns_environment text, p_key_action text,
    p_public_key bytea, p_kid text, p_app_limit bigint DEFAULT NULL, p_user_limit int DEFAULT 20)
RETURNS TABLE (device_id uuid, created boolean, reactivated boolean, evicted uuid[])
LANGUAGE sql AS $$
    SELECT r.device_id, r.created, r.reactivated, r.evicted
      FROM push_register_device_v2(p_app_id, p_mode, p_platform, p_token, p_endpoint, p_p256dh, p_auth_secret,
                                   p_user_id, p_apns_environment, p_key_action, p_public_key, p_kid,
                                   p_app_limit, p_user_limit) AS r
$$;

-- MARK: - Apps (R-APP-1, R-LIM-1)

-- push_check_app_fields: the bounds of an app's fields (null = not given): name 1 to 200
-- characters; placeholder_title and placeholder_body at most 128 bytes each, as escaped in the
-- JSON payload. With sound and thread_id (64 each) and the largest badge, the fields in clear
-- beside an encrypted iOS payload then leave it at least 2,582 bytes of content (R-LIM-1: at
-- least 2,500; `AcceptanceLimitsTests` computes it with PushCore's size rule).
CREATE FUNCTION push_check_app_fields(p_name text, p_placeholder_title text, p_placeholder_body text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF p_name IS NOT NULL AND char_length(p_name) NOT BETWEEN 1 AND 200 THEN
        PERFORM push_refuse('name', 'must be 1 to 200 characters');
    END IF;
    IF p_placeholder_title IS NOT NULL AND push_json_text_bytes(p_placeholder_title) > 128 THEN
        PERFORM push_refuse('placeholder_title', 'at most 128 bytes (UTF-8, as escaped in the JSON payload)');
    END IF;
    IF p_placeholder_body IS NOT NULL AND push_json_text_bytes(p_placeholder_body) > 128 THEN
        PERFORM push_refuse('placeholder_body', 'at most 128 bytes (UTF-8, as escaped in the JSON payload)');
    END IF;
END
$$;

-- push_app_create: a new app (R-APP-1 defaults for what is null: require_encryption false,
-- placeholder_title 'New notification', placeholder_body ''), its fields bounded.
CREATE FUNCTION push_app_create(p_name text, p_require_encryption boolean DEFAULT NULL,
                                p_placeholder_title text DEFAULT NULL, p_placeholder_body text DEFAULT NULL)
RETURNS TABLE (id uuid, name text, require_encryption boolean, placeholder_title text, placeholder_body text,
               deleted boolean, created_at timestamptz, updated_at timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    IF p_name IS NULL THEN
        PERFORM push_refuse('name', 'is required');
    END IF;
    PERFORM push_check_app_fields(p_name, p_placeholder_title, p_placeholder_body);
    RETURN QUERY
        INSERT INTO push_apps AS a (name, require_encryption, placeholder_title, placeholder_body)
        VALUES (p_name, coalesce(p_require_encryption, false), coalesce(p_placeholder_title, 'New notification'),
                coalesce(p_placeholder_body, ''))
        RETURNING a.id, a.name, a.require_encryption, a.placeholder_title, a.placeholder_body,
                  a.deleted_at IS NOT NULL, a.created_at, a.updated_at;
END
$$;

-- push_app_update: changes the given fields (null leaves one as it is) of an app that is not
-- deleted; NOT_FOUND otherwise. The policy takes effect for notifications already queued too
-- (R-APP-2: read at send time). Turning require_encryption off records a
-- push_app.encryption_disabled event for the live mode (issue 14: visible, since an API cannot ask
-- for confirmation), in the same transaction (R-PRV-4).
CREATE FUNCTION push_app_update(p_id uuid, p_require_encryption boolean DEFAULT NULL,
                                p_placeholder_title text DEFAULT NULL, p_placeholder_body text DEFAULT NULL,
                                p_name text DEFAULT NULL)
RETURNS TABLE (id uuid, name text, require_encryption boolean, placeholder_title text, placeholder_body text,
               deleted boolean, created_at timestamptz, updated_at timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_before boolean;
BEGIN
    PERFORM push_check_app_fields(p_name, p_placeholder_title, p_placeholder_body);
    SELECT a.require_encryption INTO v_before FROM push_apps a WHERE a.id = p_id AND a.deleted_at IS NULL FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'NOT_FOUND: push app % does not exist', p_id USING COLUMN = 'app_id';
    END IF;
    IF v_before AND p_require_encryption = false THEN
        INSERT INTO push_events (app_id, type, payload)
        VALUES (p_id, 'push_app.encryption_disabled', jsonb_build_object('mode', 'live'));
    END IF;
    RETURN QUERY
        UPDATE push_apps a SET require_encryption = coalesce(p_require_encryption, a.require_encryption),
                               placeholder_title = coalesce(p_placeholder_title, a.placeholder_title),
                               placeholder_body = coalesce(p_placeholder_body, a.placeholder_body),
                               name = coalesce(p_name, a.name), updated_at = now()
         WHERE a.id = p_id
        RETURNING a.id, a.name, a.require_encryption, a.placeholder_title, a.placeholder_body,
                  a.deleted_at IS NOT NULL, a.created_at, a.updated_at;
END
$$;

-- MARK: - Queue statistics

-- push_queue_stats, as in 0001, with the age of the oldest due job over finite times only (a row
-- run at '-infinity', written past push_enqueue, made the whole view fail: "cannot subtract
-- infinite timestamps"). Same columns.
CREATE OR REPLACE VIEW push_queue_stats AS
SELECT
    count(*) FILTER (WHERE state = 'available')                         AS available,
    count(*) FILTER (WHERE state = 'available' AND run_at <= now())     AS due,
    count(*) FILTER (WHERE state = 'running')                           AS running,
    count(*) FILTER (WHERE state = 'discarded')                         AS discarded,
    count(*) FILTER (WHERE state = 'completed')                         AS completed,
    count(*) FILTER (WHERE state = 'cancelled')                         AS cancelled,
    coalesce(extract(epoch FROM now() - min(run_at) FILTER (WHERE state = 'available' AND run_at <= now()
                                                              AND isfinite(run_at))), 0)::float8
                                                                         AS oldest_due_age_seconds
FROM push_jobs;
