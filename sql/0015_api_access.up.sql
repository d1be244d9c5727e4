-- API access for real deployments (issue 15): keys scoped to apps, the audit log, the usage
-- report's index, per-user erasure. Expand-only: a worker, CLI or API of the previous release keeps
-- working (a key made without apps sees every app of its account, as before).

-- Keys scoped to apps (issue 15 part 3, R-API-1): NULL is every app of the key's account; a list
-- limits the key to those apps, and every other app answers 404 like one that does not exist.
-- `pushfleet api-keys create --apps` checks each is the account's when the key is made.
ALTER TABLE push_api_keys ADD COLUMN app_ids uuid[]
    CHECK (app_ids IS NULL OR (cardinality(app_ids) BETWEEN 1 AND 100 AND array_position(app_ids, NULL) IS NULL));

-- The audit log (issue 15 part 5): who changed what an operator must be able to trace, and when.
-- Recorded by the stores in the transaction of the change itself: API keys created and revoked
-- (`AccountStore`), credential sets stored and removed (`CredentialStore`), `require_encryption`
-- changed (`AcceptanceService.updateApp`). `actor` is the API key's display prefix, `oauth:` and
-- the access token's subject, or `cli:` and the operator's login; never a key, a token or a secret.
-- `details` holds identifiers only (kinds, modes, permissions, the policy's old and new values).
-- Kept for good: an operator deletes old rows deliberately (docs/api.md, "Audit").
CREATE TABLE push_audit_events (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    account_id  uuid NOT NULL REFERENCES push_accounts (id) ON DELETE CASCADE,
    -- The app concerned; NULL for a key's events. No foreign key: the trail outlives the app.
    app_id      uuid,
    actor       text NOT NULL CHECK (char_length(actor) BETWEEN 1 AND 300),
    action      text NOT NULL CHECK (action ~ '^[a-z_]+\.[a-z_]+$'),
    -- The object acted on, as its prefixed id (`pkey_...`, `papp_...`).
    target      text CHECK (target IS NULL OR char_length(target) <= 100),
    details     jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(details) = 'object'),
    created_at  timestamptz NOT NULL DEFAULT now()
);
-- GET /v1/push/audit, `pushfleet audit --account`: an account's events newest first (keyset).
CREATE INDEX push_audit_events_account_idx ON push_audit_events (account_id, created_at DESC, id DESC);
-- ... filtered by app (`app_id=`).
CREATE INDEX push_audit_events_app_idx ON push_audit_events (app_id, created_at DESC, id DESC) WHERE app_id IS NOT NULL;

-- Usage (issue 15 part 4): deliveries charged net of refunds per app, mode and day, read from
-- the ledger (R-SEND-9) by GET /v1/push/usage and `pushfleet usage` (`UsageQueries.report`). Ledger
-- rows are never deleted by retention: billing data outlives delivery rows (30 days).
CREATE INDEX push_ledger_usage_idx ON push_ledger (app_id, mode, created_at) INCLUDE (kind);

-- push_erase_user(uuid,text,text): the text of sql/functions/push_erase_user.sql.
CREATE FUNCTION push_erase_user(p_app_id uuid, p_mode text, p_user_id text)
RETURNS TABLE (devices_deactivated int, notifications_erased int, notifications_unnamed int, payloads_erased int)
LANGUAGE plpgsql AS $$
DECLARE
    v_devices uuid[];
    v_alone uuid[];
    v_several uuid[];
BEGIN
    IF p_user_id IS NULL OR char_length(p_user_id) NOT BETWEEN 1 AND 255 THEN
        PERFORM push_refuse('user_id', 'must be 1 to 255 characters');
    END IF;
    IF p_mode IS NULL OR p_mode NOT IN ('test', 'live') THEN
        PERFORM push_refuse('mode', 'must be test or live');
    END IF;
    SELECT coalesce(array_agg(n.id ORDER BY n.id) FILTER (WHERE n.user_ids <@ ARRAY[p_user_id]), '{}'),
           coalesce(array_agg(n.id ORDER BY n.id) FILTER (WHERE NOT n.user_ids <@ ARRAY[p_user_id]), '{}')
      INTO v_alone, v_several
      FROM push_notifications n
     WHERE n.app_id = p_app_id AND n.mode = p_mode AND p_user_id = ANY (n.user_ids);
    PERFORM 1 FROM push_notifications n WHERE n.id = ANY (v_alone || v_several) ORDER BY n.id FOR UPDATE;
    UPDATE push_notifications
       SET title = NULL, body = NULL, data = NULL, sound = NULL, thread_id = NULL, category = NULL,
           target_content_id = NULL, critical_sound_name = NULL, title_loc_key = NULL, title_loc_args = NULL,
           body_loc_key = NULL, body_loc_args = NULL, channel_id = NULL, sms_phone = NULL, sms_text = NULL,
           user_ids = '{}', content_erased_at = coalesce(content_erased_at, now())
     WHERE id = ANY (v_alone);
    -- Their SMS fallbacks that ended lose the phone, the text and test mode's request body
    -- (sql/0012; push_sms_outbox's unique notification_id). One still pending or sending is
    -- skipped (the dispatcher holds it; its visible row is not final, so this never waits on it)
    -- and retention's eraseFinalSMS erases it once it ends, its notification's content being erased.
    UPDATE push_sms_outbox SET phone = NULL, text = NULL, request = NULL, content_erased_at = now()
     WHERE notification_id = ANY (v_alone) AND finished_at IS NOT NULL AND content_erased_at IS NULL;
    notifications_erased := cardinality(v_alone);
    UPDATE push_notifications SET user_ids = array_remove(user_ids, p_user_id) WHERE id = ANY (v_several);
    notifications_unnamed := cardinality(v_several);
    SELECT coalesce(array_agg(d.id ORDER BY d.id), '{}') INTO v_devices
      FROM push_devices d WHERE d.app_id = p_app_id AND d.mode = p_mode AND d.user_id = p_user_id;
    WITH erased AS (
        UPDATE push_deliveries v SET payload = NULL
         WHERE v.notification_id = ANY (v_alone || v_several) AND v.payload IS NOT NULL
           AND (v.device_id = ANY (v_devices) OR v.notification_id = ANY (v_alone))
        RETURNING 1
    )
    SELECT count(*)::int INTO payloads_erased FROM erased;
    PERFORM 1 FROM push_devices d WHERE d.id = ANY (v_devices) AND d.active ORDER BY d.id FOR UPDATE;
    WITH gone AS (
        UPDATE push_devices SET active = false, deactivated_at = clock_timestamp(), deactivation_reason = 'USER_ERASED'
         WHERE id = ANY (v_devices) AND active
        RETURNING 1
    )
    SELECT count(*)::int INTO devices_deactivated FROM gone;
    IF devices_deactivated > 0 THEN
        UPDATE push_device_counts SET active_count = greatest(active_count - devices_deactivated, 0)
         WHERE app_id = p_app_id AND mode = p_mode;
    END IF;
    RETURN NEXT;
END
$$;
