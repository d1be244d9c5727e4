-- Issue 16, one typed boundary between the worker and the store. The worker's send time and
-- record go through three new functions, which store what PushCore decided instead of deciding
-- again: push_start_notifications (DEVICE_GONE's ledger row passed in, one answer per job),
-- push_record (one JSON value instead of 22 parallel arrays; the ledger row of each delivery
-- passed in; one answer per job, so a lost lease no longer fails the others) and
-- push_finalize_notifications (device_count passed in). Their current text lives in
-- sql/functions/; this migration is generated from it (scripts/sql-functions restate).
--
-- Expand-then-contract: push_start_notification, push_record_batch(es) and
-- push_finalize_notification stay as they were for workers of the previous release; the
-- contract step drops them once no worker below schema 10 runs.

-- One delivery record as the worker sends it (the shape of push_record's "deliveries").
CREATE TYPE push_delivery_record AS (
    job_id bigint,
    device_id uuid,
    status text,               -- retrying | sent | failed
    error_code text,
    error_detail text,
    encrypted boolean,
    provider text,
    provider_message_id text,
    attempts int,
    failures int,
    next_attempt_at timestamptz,
    payload bytea,             -- test mode only (R-MODE-2)
    ledger text,               -- charge | refund | none (PushCore's LedgerRule)
    deactivate_reason text,    -- UNREGISTERED | INVALID_TOKEN | APP_MISMATCH
    verdict_at timestamptz     -- R-DEV-8; NULL = the record time
);

-- One credential-set change a batch caused (push_record's "credentials").
CREATE TYPE push_credential_change AS (
    job_id bigint,
    kind text,
    change text,               -- invalid | accepted
    reason text
);

-- Credential kinds are the provider table's (ProviderTable in PushProviders), as platforms already
-- are (push_devices.platform has no CHECK): a release that adds a provider needs no schema change,
-- and the CLI refuses kinds the table does not serve. Dropping a CHECK only widens what is
-- accepted: a worker of the previous release is unaffected.
ALTER TABLE push_credentials DROP CONSTRAINT push_credentials_kind_check;

-- push_start_notifications(bigint[],uuid[],int,text,timestamptz): the text of sql/functions/push_start_notifications.sql.
CREATE FUNCTION push_start_notifications(p_job_ids bigint[], p_lease_tokens uuid[], p_batch_size int,
                                         p_gone_ledger text, p_now timestamptz DEFAULT now())
RETURNS TABLE (job_id bigint, outcome text, status text, inline_device_ids uuid[], batch_jobs int, gone int,
               encrypted boolean)
LANGUAGE plpgsql AS $$
DECLARE
    i int;
    v_notification uuid;
    v_job push_jobs;
    v_n push_notifications;
    v_app push_apps;
    v_targets uuid[];
    v_gone int;
    v_batches int;
    v_encrypted boolean;
BEGIN
    IF p_gone_ledger IS NULL OR p_gone_ledger NOT IN ('none', 'refund') THEN
        RAISE EXCEPTION 'VALIDATION_ERROR: p_gone_ledger must be none or refund (a gone device was charged)';
    END IF;
    IF coalesce(cardinality(p_job_ids), 0) <> coalesce(cardinality(p_lease_tokens), 0) THEN
        RAISE EXCEPTION 'VALIDATION_ERROR: one lease token per job';
    END IF;
    PERFORM 1 FROM push_notifications n
     WHERE n.id IN (SELECT j.notification_id FROM push_jobs j WHERE j.id = ANY (p_job_ids))
     ORDER BY n.id FOR UPDATE;
    PERFORM 1 FROM push_jobs j WHERE j.id = ANY (p_job_ids) ORDER BY j.id FOR UPDATE;
    FOR i IN 1 .. coalesce(cardinality(p_job_ids), 0) LOOP
        job_id := p_job_ids[i];
        status := NULL; inline_device_ids := NULL; batch_jobs := NULL; gone := NULL; encrypted := NULL;
        SELECT j.notification_id INTO v_notification FROM push_jobs j WHERE j.id = p_job_ids[i];
        SELECT * INTO v_n FROM push_notifications n WHERE n.id = v_notification;
        SELECT * INTO v_job FROM push_jobs j
         WHERE j.id = p_job_ids[i] AND j.lease_token = p_lease_tokens[i] AND j.state = 'running';
        IF NOT FOUND THEN
            outcome := 'lease_lost';
            RETURN NEXT;
            CONTINUE;
        END IF;
        IF v_n.id IS NULL THEN
            outcome := 'orphaned';
            RETURN NEXT;
            CONTINUE;
        END IF;
        IF v_n.status <> 'pending' THEN
            outcome := 'not_pending';
            status := v_n.status;
            RETURN NEXT;
            CONTINUE;
        END IF;
        SELECT * INTO v_app FROM push_apps a WHERE a.id = v_n.app_id;
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
        ), ledgered AS (
            INSERT INTO push_ledger (notification_id, device_id, kind, app_id, mode, reason)
            SELECT v_n.id, d.device_id, p_gone_ledger, v_n.app_id, v_n.mode, 'DEVICE_GONE' FROM delivered d
             WHERE p_gone_ledger <> 'none'
            ON CONFLICT DO NOTHING
            RETURNING 1
        )
        SELECT count(*) INTO v_gone FROM delivered;

        IF cardinality(v_targets) <= p_batch_size THEN
            v_batches := CASE WHEN cardinality(v_targets) = 0 THEN 0 ELSE 1 END;
            UPDATE push_jobs j SET kind = 'batch', device_ids = v_targets WHERE j.id = p_job_ids[i];
            inline_device_ids := v_targets;
        ELSE
            INSERT INTO push_jobs (kind, notification_id, app_id, device_ids, priority, run_at)
            SELECT 'batch', v_n.id, v_n.app_id, v_targets[g * p_batch_size + 1 : (g + 1) * p_batch_size],
                   v_job.priority, p_now
              FROM generate_series(0, (cardinality(v_targets) - 1) / p_batch_size) AS g;
            GET DIAGNOSTICS v_batches = ROW_COUNT;
            UPDATE push_jobs j SET state = 'completed', finalized_at = p_now, lease_token = NULL,
                                   lease_expires_at = NULL, lease_owner = NULL
             WHERE j.id = p_job_ids[i];
            PERFORM pg_notify('pushfleet_jobs', '');
        END IF;

        UPDATE push_notifications n
           SET status = 'sending', encrypted = v_encrypted, started_at = p_now, remaining_batches = v_batches
         WHERE n.id = v_n.id;
        outcome := 'started';
        status := 'sending';
        batch_jobs := v_batches;
        gone := v_gone;
        encrypted := v_encrypted;
        RETURN NEXT;
    END LOOP;
END
$$;

-- push_record(json,timestamptz): the text of sql/functions/push_record.sql.
CREATE FUNCTION push_record(p_batch json, p_now timestamptz DEFAULT now())
RETURNS TABLE (job_id bigint, outcome text, remaining_batches int, deactivated int, ending_codes text[],
               ending_nets boolean[], has_sms boolean)
LANGUAGE plpgsql AS $$
DECLARE
    v_all push_delivery_record[];
    v_changes push_credential_change[];
    v_recs push_delivery_record[];
    v_entry json;
    v_id bigint;
    v_notification uuid;
    v_job push_jobs;
    v_n push_notifications;
    v_retry_at timestamptz;
    v_retry_ids uuid[];
    v_deactivated int;
    v_remaining int;
    lo int;
    hi int := 0;
BEGIN
    v_all := ARRAY(SELECT r FROM json_populate_recordset(NULL::push_delivery_record,
                                                         coalesce(p_batch -> 'deliveries', '[]')) r);
    v_changes := ARRAY(SELECT c FROM json_populate_recordset(NULL::push_credential_change,
                                                             coalesce(p_batch -> 'credentials', '[]')) c);
    PERFORM 1 FROM push_notifications n
     WHERE n.id IN (SELECT j.notification_id FROM push_jobs j, json_array_elements(coalesce(p_batch -> 'jobs', '[]')) e
                     WHERE j.id = (e ->> 'job_id')::bigint)
     ORDER BY n.id FOR UPDATE;
    PERFORM 1 FROM push_jobs j, json_array_elements(coalesce(p_batch -> 'jobs', '[]')) e
     WHERE j.id = (e ->> 'job_id')::bigint ORDER BY j.id FOR UPDATE OF j;
    PERFORM push_lock_record_rows(
        ARRAY(SELECT r.device_id FROM unnest(v_all) r WHERE r.deactivate_reason IS NOT NULL),
        ARRAY(SELECT j.app_id FROM unnest(v_changes) WITH ORDINALITY AS c(jid, kind, change, reason, n)
                JOIN push_jobs j ON j.id = c.jid WHERE c.change = 'invalid' ORDER BY c.n),
        ARRAY(SELECT c.kind FROM unnest(v_changes) WITH ORDINALITY AS c(jid, kind, change, reason, n)
               WHERE c.change = 'invalid' AND EXISTS (SELECT 1 FROM push_jobs j WHERE j.id = c.jid) ORDER BY c.n),
        ARRAY(SELECT j.app_id FROM unnest(v_changes) WITH ORDINALITY AS c(jid, kind, change, reason, n)
                JOIN push_jobs j ON j.id = c.jid WHERE c.change = 'accepted' ORDER BY c.n),
        ARRAY(SELECT c.kind FROM unnest(v_changes) WITH ORDINALITY AS c(jid, kind, change, reason, n)
               WHERE c.change = 'accepted' AND EXISTS (SELECT 1 FROM push_jobs j WHERE j.id = c.jid) ORDER BY c.n));
    FOR v_entry IN SELECT e FROM json_array_elements(coalesce(p_batch -> 'jobs', '[]')) e LOOP
        v_id := (v_entry ->> 'job_id')::bigint;
        lo := hi + 1;
        hi := hi + (v_entry ->> 'records')::int;
        v_recs := coalesce(v_all[lo:hi], '{}');
        job_id := v_id;
        remaining_batches := NULL; deactivated := NULL; ending_codes := NULL; ending_nets := NULL; has_sms := NULL;

        SELECT j.notification_id INTO v_notification FROM push_jobs j WHERE j.id = v_id;
        SELECT * INTO v_n FROM push_notifications n WHERE n.id = v_notification;
        SELECT * INTO v_job FROM push_jobs j
         WHERE j.id = v_id AND j.lease_token = (v_entry ->> 'lease_token')::uuid AND j.state = 'running';
        IF NOT FOUND THEN
            outcome := 'lease_lost';
            RETURN NEXT;
            CONTINUE;
        END IF;
        IF v_n.id IS NULL THEN
            outcome := 'orphaned';
            RETURN NEXT;
            CONTINUE;
        END IF;

        -- One statement: every part reads the same batch rows (r) and the same snapshot.
        WITH r AS (
            SELECT * FROM unnest(v_recs)
        ), delivered AS (
            INSERT INTO push_deliveries AS del (notification_id, device_id, status, error_code, error_detail, encrypted,
                provider, provider_message_id, apns_id, attempts, failures, next_attempt_at, payload, updated_at, finished_at)
            SELECT v_n.id, r.device_id, r.status, r.error_code, left(r.error_detail, 500), coalesce(r.encrypted, false),
                   r.provider, r.provider_message_id, push_apns_id(v_n.id, r.device_id), r.attempts,
                   coalesce(r.failures, 0), CASE WHEN r.status = 'retrying' THEN r.next_attempt_at END, r.payload, p_now,
                   CASE WHEN r.status = 'retrying' THEN NULL ELSE p_now END
              FROM r
            ON CONFLICT (notification_id, device_id) DO UPDATE
               SET status = excluded.status, error_code = excluded.error_code, error_detail = excluded.error_detail,
                   encrypted = excluded.encrypted, provider = excluded.provider,
                   provider_message_id = excluded.provider_message_id, attempts = excluded.attempts,
                   failures = excluded.failures, next_attempt_at = excluded.next_attempt_at,
                   payload = excluded.payload, updated_at = excluded.updated_at, finished_at = excluded.finished_at
             WHERE del.status = 'retrying'
            RETURNING 1
        ), ledgered AS (
            -- R-SEND-9, as LedgerRule decided: the missing charge, or the refund of the acceptance charge.
            INSERT INTO push_ledger (notification_id, device_id, kind, app_id, mode, reason)
            SELECT v_n.id, r.device_id, r.ledger, v_n.app_id, v_n.mode, coalesce(r.error_code, 'sent')
              FROM r WHERE r.ledger IN ('charge', 'refund')
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
              FROM (SELECT off.app_id, off.mode, count(*) AS n FROM off GROUP BY off.app_id, off.mode) o
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
            UPDATE push_credentials c SET state = 'invalid', invalid_reason = x.reason, updated_at = p_now
              FROM unnest(v_changes) x
             WHERE x.job_id = v_id AND x.change = 'invalid'
               AND c.app_id = v_n.app_id AND c.kind = x.kind AND c.state <> 'invalid'
            RETURNING c.app_id, c.kind, c.invalid_reason
        )
        INSERT INTO push_events (app_id, type, payload)
        SELECT bad.app_id, 'push_app.credentials_invalid', jsonb_build_object('kind', bad.kind, 'reason', bad.invalid_reason)
          FROM bad;
        UPDATE push_credentials c
           SET state = CASE WHEN c.state = 'unverified' THEN 'verified' ELSE c.state END,
               first_accepted_at = coalesce(c.first_accepted_at, p_now), updated_at = p_now
         WHERE c.app_id = v_n.app_id
           AND c.kind IN (SELECT x.kind FROM unnest(v_changes) x WHERE x.job_id = v_id AND x.change = 'accepted')
           AND (c.first_accepted_at IS NULL OR c.state = 'unverified');

        SELECT min(u.next_attempt_at), array_agg(u.device_id ORDER BY u.device_id) INTO v_retry_at, v_retry_ids
          FROM unnest(v_recs) u WHERE u.status = 'retrying';
        IF v_retry_ids IS NOT NULL THEN
            INSERT INTO push_jobs (kind, notification_id, app_id, device_ids, priority, run_at)
            VALUES ('batch', v_n.id, v_n.app_id, v_retry_ids, v_job.priority, v_retry_at);
            v_remaining := v_n.remaining_batches;
        ELSE
            v_remaining := greatest(v_n.remaining_batches - 1, 0);
            UPDATE push_notifications n SET remaining_batches = v_remaining WHERE n.id = v_n.id;
        END IF;

        UPDATE push_jobs j SET state = 'completed', finalized_at = p_now, lease_token = NULL,
                               lease_expires_at = NULL, lease_owner = NULL
         WHERE j.id = v_id;

        outcome := 'recorded';
        remaining_batches := v_remaining;
        deactivated := v_deactivated;
        IF v_remaining = 0 THEN
            -- Every delivery's ending, with its net from the ledger (one pass over each side by the
            -- notification's primary-key prefix).
            SELECT coalesce(array_agg(CASE WHEN d.status = 'sent' THEN 'sent' ELSE d.error_code END ORDER BY d.device_id), '{}'),
                   coalesce(array_agg(coalesce(l.nets, false) ORDER BY d.device_id), '{}')
              INTO ending_codes, ending_nets
              FROM push_deliveries d
              LEFT JOIN (SELECT g.device_id, bool_or(g.kind = 'charge') AND NOT bool_or(g.kind = 'refund') AS nets
                           FROM push_ledger g WHERE g.notification_id = v_n.id GROUP BY g.device_id) l
                ON l.device_id = d.device_id
             WHERE d.notification_id = v_n.id;
        END IF;
        has_sms := v_n.sms_phone IS NOT NULL;
        RETURN NEXT;
    END LOOP;
END
$$;

-- push_finalize_notifications(uuid[],text[],text[],int[],timestamptz): the text of sql/functions/push_finalize_notifications.sql.
CREATE FUNCTION push_finalize_notifications(p_ids uuid[], p_statuses text[], p_error_codes text[],
                                            p_device_counts int[], p_now timestamptz DEFAULT now())
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM unnest(p_statuses) s WHERE s IS NULL OR s NOT IN ('sent', 'sms_fallback', 'failed')) THEN
        RAISE EXCEPTION 'VALIDATION_ERROR: a final status is sent, sms_fallback or failed';
    END IF;
    UPDATE push_notifications n
       SET status = f.status, error_code = f.code, finished_at = p_now, remaining_batches = 0,
           device_count = f.device_count
      FROM unnest(p_ids, p_statuses, p_error_codes, p_device_counts) AS f(id, status, code, device_count)
     WHERE n.id = f.id AND n.finished_at IS NULL;
    INSERT INTO push_sms_outbox (notification_id, app_id, phone, text)
    SELECT n.id, n.app_id, n.sms_phone, n.sms_text
      FROM unnest(p_ids, p_statuses) AS f(id, status)
      JOIN push_notifications n ON n.id = f.id
     WHERE f.status = 'sms_fallback' AND n.sms_phone IS NOT NULL
    ON CONFLICT (notification_id) DO NOTHING;
END
$$;

-- push_register_device_v2(uuid,text,text,text,text,bytea,bytea,text,text,text,bytea,text,bigint,int): the text of sql/functions/push_register_device_v2.sql.
CREATE OR REPLACE FUNCTION push_register_device_v2(
    p_app_id uuid, p_mode text, p_platform text, p_token text, p_endpoint text, p_p256dh bytea,
    p_auth_secret bytea, p_user_id text, p_apns_environment text, p_key_action text,
    p_public_key bytea, p_kid text, p_app_limit bigint DEFAULT NULL, p_user_limit int DEFAULT NULL)
RETURNS TABLE (device_id uuid, created boolean, reactivated boolean, evicted uuid[], app_id uuid, platform text,
               user_id text, apns_environment text, active boolean, kid text, created_at timestamptz,
               last_registered_at timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_dev push_devices;
    v_app_limit bigint := p_app_limit;
    v_user_limit int := p_user_limit;
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
    -- The limits are PushCore's (DeviceLimits), passed by the registry on every call: this
    -- function holds no number of its own (issue 16).
    IF v_app_limit IS NULL OR v_user_limit IS NULL THEN
        PERFORM push_refuse('app_limit', 'the per-app and per-user device limits are required (PushCore DeviceLimits)');
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

-- push_register_device(uuid,text,text,text,text,bytea,bytea,text,text,text,bytea,text,bigint,int): the text of sql/functions/push_register_device.sql.
CREATE OR REPLACE FUNCTION push_register_device(
    p_app_id uuid, p_mode text, p_platform text, p_token text, p_endpoint text, p_p256dh bytea,
    p_auth_secret bytea, p_user_id text, p_apns_environment text, p_key_action text,
    p_public_key bytea, p_kid text, p_app_limit bigint DEFAULT NULL, p_user_limit int DEFAULT 20)
RETURNS TABLE (device_id uuid, created boolean, reactivated boolean, evicted uuid[])
LANGUAGE sql AS $$
    SELECT r.device_id, r.created, r.reactivated, r.evicted
      FROM push_register_device_v2(p_app_id, p_mode, p_platform, p_token, p_endpoint, p_p256dh, p_auth_secret,
                                   p_user_id, p_apns_environment, p_key_action, p_public_key, p_kid,
                                   coalesce(p_app_limit, CASE WHEN p_mode = 'live' THEN 1000000 ELSE 1000 END),
                                   coalesce(p_user_limit, 20)) AS r
$$;
