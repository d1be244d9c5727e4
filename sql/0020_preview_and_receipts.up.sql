-- Issue 24 parts 2 to 5 (R-IDS-2..4, docs/rules.md): device-bound preview tokens, the preview fetch and its
-- revocation, the preview window of ids_only content, and confirmed deliveries. Expand only: a
-- worker or API of the previous release keeps working (new columns have defaults or are NULL, the
-- new registration function stands beside push_register_device_v2).

-- Per app (R-IDS-4): confirmed delivery is opt-in; the preview window of ids_only content.
ALTER TABLE push_apps
    ADD COLUMN confirm_deliveries boolean NOT NULL DEFAULT false,
    ADD COLUMN preview_window_seconds int NOT NULL DEFAULT 259200
        CHECK (preview_window_seconds BETWEEN 60 AND 2419200);

-- The device's preview token (R-IDS-2), stored only as SHA-256 of its text; unique so a token
-- names one device (a collision of 256-bit random tokens does not happen; the index makes the
-- lookup one probe).
ALTER TABLE push_devices ADD COLUMN preview_token_hash bytea
    CHECK (preview_token_hash IS NULL OR octet_length(preview_token_hash) = 32);
CREATE UNIQUE INDEX push_devices_preview_token_key ON push_devices (preview_token_hash)
    WHERE preview_token_hash IS NOT NULL;

-- The first successful fetch or receipt of a delivery (R-IDS-4).
ALTER TABLE push_deliveries ADD COLUMN confirmed_at timestamptz;

-- Revocation (whole, or per user) and the end of the preview window (push_preview_until).
ALTER TABLE push_notifications
    ADD COLUMN revoked_at timestamptz,
    ADD COLUMN revoked_user_ids text[] NOT NULL DEFAULT '{}',
    ADD COLUMN preview_until timestamptz;

-- Content erasure waits for the preview window too: final notifications ordered by
-- greatest(finished_at, preview_until) (GREATEST ignores NULL), so held ones are never scanned
-- before their time. Replaces push_notifications_erasable_idx (sql/0003) for the Maintainer.
CREATE INDEX push_notifications_erasable_v2_idx ON push_notifications ((greatest(finished_at, preview_until)))
    WHERE finished_at IS NOT NULL AND content_erased_at IS NULL;

-- push_register_device_v3(uuid,text,text,text,text,bytea,bytea,text,text,text,bytea,text,bigint,int,bytea,boolean): the text of sql/functions/push_register_device_v3.sql.
CREATE FUNCTION push_register_device_v3(
    p_app_id uuid, p_mode text, p_platform text, p_token text, p_endpoint text, p_p256dh bytea,
    p_auth_secret bytea, p_user_id text, p_apns_environment text, p_key_action text,
    p_public_key bytea, p_kid text, p_app_limit bigint, p_user_limit int,
    p_preview_token_hash bytea, p_rotate boolean)
RETURNS TABLE (device_id uuid, created boolean, reactivated boolean, evicted uuid[], app_id uuid, platform text,
               user_id text, apns_environment text, active boolean, kid text, created_at timestamptz,
               last_registered_at timestamptz, preview_token_set boolean)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    r record;
    v_set boolean;
BEGIN
    IF p_preview_token_hash IS NOT NULL AND octet_length(p_preview_token_hash) <> 32 THEN
        PERFORM push_refuse('preview_token', 'its hash must be 32 bytes (SHA-256)');
    END IF;
    IF p_rotate IS NULL THEN
        PERFORM push_refuse('rotate_preview_token', 'must be true or false');
    END IF;
    SELECT * INTO r FROM push_register_device_v2(p_app_id, p_mode, p_platform, p_token, p_endpoint, p_p256dh,
                                                 p_auth_secret, p_user_id, p_apns_environment, p_key_action,
                                                 p_public_key, p_kid, p_app_limit, p_user_limit);
    v_set := p_preview_token_hash IS NOT NULL AND (r.created OR p_rotate);
    IF v_set THEN
        UPDATE push_devices d SET preview_token_hash = p_preview_token_hash WHERE d.id = r.device_id;
    END IF;
    RETURN QUERY SELECT r.device_id, r.created, r.reactivated, r.evicted, r.app_id, r.platform, r.user_id,
                        r.apns_environment, r.active, r.kid, r.created_at, r.last_registered_at, v_set;
END
$$;

-- push_app_set_preview(uuid,boolean,int): the text of sql/functions/push_app_set_preview.sql.
CREATE FUNCTION push_app_set_preview(p_app_id uuid, p_confirm_deliveries boolean, p_preview_window_seconds int)
RETURNS TABLE (id uuid, name text, require_encryption boolean, placeholder_title text, placeholder_body text,
               placeholder_title_loc_key text, placeholder_body_loc_key text, confirm_deliveries boolean,
               preview_window_seconds int, deleted boolean, created_at timestamptz, updated_at timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    IF p_preview_window_seconds IS NOT NULL AND p_preview_window_seconds NOT BETWEEN 60 AND 2419200 THEN
        PERFORM push_refuse('preview_window_seconds', 'must be 60 to 2419200 seconds (28 days)');
    END IF;
    IF p_confirm_deliveries IS NOT NULL OR p_preview_window_seconds IS NOT NULL THEN
        UPDATE push_apps a
           SET confirm_deliveries = coalesce(p_confirm_deliveries, a.confirm_deliveries),
               preview_window_seconds = coalesce(p_preview_window_seconds, a.preview_window_seconds),
               updated_at = CASE WHEN (p_confirm_deliveries IS NOT NULL AND p_confirm_deliveries <> a.confirm_deliveries)
                                   OR (p_preview_window_seconds IS NOT NULL AND p_preview_window_seconds <> a.preview_window_seconds)
                                 THEN now() ELSE a.updated_at END
         WHERE a.id = p_app_id AND a.deleted_at IS NULL;
    END IF;
    RETURN QUERY
    SELECT a.id, a.name, a.require_encryption, a.placeholder_title, a.placeholder_body, a.placeholder_title_loc_key,
           a.placeholder_body_loc_key, a.confirm_deliveries, a.preview_window_seconds, a.deleted_at IS NOT NULL,
           a.created_at, a.updated_at
      FROM push_apps a WHERE a.id = p_app_id AND a.deleted_at IS NULL;
END
$$;

-- push_preview_until(): the text of sql/functions/push_preview_until.sql.
CREATE FUNCTION push_preview_until() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF to_jsonb(NEW) ->> 'content_mode' = 'ids_only' THEN
        SELECT least(NEW.started_at + make_interval(secs => a.preview_window_seconds), NEW.expires_at)
          INTO NEW.preview_until
          FROM push_apps a WHERE a.id = NEW.app_id;
    END IF;
    RETURN NEW;
END
$$;

-- push_revoke(uuid,text[]): the text of sql/functions/push_revoke.sql.
CREATE FUNCTION push_revoke(p_notification_id uuid, p_user_ids text[])
RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    v_users text[];
BEGIN
    IF p_user_ids IS NOT NULL THEN
        IF cardinality(p_user_ids) NOT BETWEEN 1 AND 1000 THEN
            PERFORM push_refuse('user_ids', 'must hold 1 to 1000 user ids');
        END IF;
        IF EXISTS (SELECT 1 FROM unnest(p_user_ids) u WHERE u IS NULL OR char_length(u) NOT BETWEEN 1 AND 255) THEN
            PERFORM push_refuse('user_ids', 'each must be 1 to 255 characters');
        END IF;
    END IF;
    SELECT n.revoked_user_ids INTO v_users FROM push_notifications n WHERE n.id = p_notification_id FOR UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    IF p_user_ids IS NULL THEN
        UPDATE push_notifications n SET revoked_at = coalesce(n.revoked_at, now()) WHERE n.id = p_notification_id;
        RETURN true;
    END IF;
    v_users := ARRAY(SELECT DISTINCT u FROM unnest(v_users || p_user_ids) u ORDER BY u);
    IF cardinality(v_users) > 1000 THEN
        PERFORM push_refuse('user_ids', 'at most 1000 revoked users per notification');
    END IF;
    UPDATE push_notifications n SET revoked_user_ids = v_users WHERE n.id = p_notification_id;
    RETURN true;
END
$$;

CREATE TRIGGER push_notifications_preview_until
    BEFORE UPDATE OF started_at ON push_notifications
    FOR EACH ROW WHEN (OLD.started_at IS NULL AND NEW.started_at IS NOT NULL)
    EXECUTE FUNCTION push_preview_until();
