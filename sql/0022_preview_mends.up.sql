-- 0022_preview_mends (issue 24, after its fresh-user trial; R-IDS-2..4, docs/rules.md):
-- * `push_apps.confirm_deliveries_since`: when confirm_deliveries was last turned on (NULL while
--   off). A delivery counts towards the confirmation rate when it was sent (finished) since then:
--   the one definition `pushfleet stats`, the confirmation step of the fetch and receipt, and the
--   worker's pushfleet_pushes_sent_total all use. An app already on counts from this migration.
-- * push_erase_content: what erasing a notification's content erases, one definition for the
--   retention's erasure and a whole revocation, which now erases the content at once when the
--   notification is final (push_revoke), else as soon as it becomes final (push_erase_revoked, an
--   AFTER UPDATE OF finished_at trigger whose WHEN passes only revoked, unerased rows).
-- * The preview-window trigger fires only for ids_only starts (a WHEN clause instead of
--   to_jsonb(NEW) on every start).
-- Expand only: a worker or API of the previous release keeps working (the new column is NULL or
-- set by the restated push_app_set_preview it also calls; push_revoke keeps its signature; a
-- previous-release Maintainer erases with its own statement, the same columns).

ALTER TABLE push_apps ADD COLUMN confirm_deliveries_since timestamptz;
UPDATE push_apps SET confirm_deliveries_since = now() WHERE confirm_deliveries;

DROP TRIGGER push_notifications_preview_until ON push_notifications;

-- push_erase_content(uuid[]): the text of sql/functions/push_erase_content.sql.
CREATE FUNCTION push_erase_content(p_ids uuid[])
RETURNS TABLE (erased int, payloads int)
LANGUAGE sql AS $$
    WITH gone AS (
        UPDATE push_notifications
           SET title = NULL, body = NULL, data = NULL, sound = NULL, thread_id = NULL, category = NULL,
               target_content_id = NULL, critical_sound_name = NULL, title_loc_key = NULL, title_loc_args = NULL,
               body_loc_key = NULL, body_loc_args = NULL, channel_id = NULL, sms_phone = NULL, sms_text = NULL,
               content_erased_at = now()
         WHERE id = ANY (p_ids) AND content_erased_at IS NULL
        RETURNING id
    ), cleared AS (
        UPDATE push_deliveries d SET payload = NULL
          FROM gone WHERE d.notification_id = gone.id AND d.payload IS NOT NULL
        RETURNING 1
    )
    SELECT (SELECT count(*) FROM gone)::int, (SELECT count(*) FROM cleared)::int
$$;

-- push_app_set_preview(uuid,boolean,int): the text of sql/functions/push_app_set_preview.sql.
CREATE OR REPLACE FUNCTION push_app_set_preview(p_app_id uuid, p_confirm_deliveries boolean, p_preview_window_seconds int)
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
               confirm_deliveries_since = CASE WHEN p_confirm_deliveries IS NULL OR p_confirm_deliveries = a.confirm_deliveries
                                               THEN a.confirm_deliveries_since
                                               WHEN p_confirm_deliveries THEN clock_timestamp() END,
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

-- push_revoke(uuid,text[]): the text of sql/functions/push_revoke.sql.
CREATE OR REPLACE FUNCTION push_revoke(p_notification_id uuid, p_user_ids text[])
RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    v_users text[];
    v_finished timestamptz;
BEGIN
    IF p_user_ids IS NOT NULL THEN
        IF cardinality(p_user_ids) NOT BETWEEN 1 AND 1000 THEN
            PERFORM push_refuse('user_ids', 'must hold 1 to 1000 user ids');
        END IF;
        IF EXISTS (SELECT 1 FROM unnest(p_user_ids) u WHERE u IS NULL OR char_length(u) NOT BETWEEN 1 AND 255) THEN
            PERFORM push_refuse('user_ids', 'each must be 1 to 255 characters');
        END IF;
    END IF;
    SELECT n.revoked_user_ids, n.finished_at INTO v_users, v_finished
      FROM push_notifications n WHERE n.id = p_notification_id FOR UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    IF p_user_ids IS NULL THEN
        UPDATE push_notifications n SET revoked_at = coalesce(n.revoked_at, now()) WHERE n.id = p_notification_id;
        IF v_finished IS NOT NULL THEN
            PERFORM push_erase_content(ARRAY[p_notification_id]);
        END IF;
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

-- push_preview_until(): the text of sql/functions/push_preview_until.sql.
CREATE OR REPLACE FUNCTION push_preview_until() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    SELECT least(NEW.started_at + make_interval(secs => a.preview_window_seconds), NEW.expires_at)
      INTO NEW.preview_until
      FROM push_apps a WHERE a.id = NEW.app_id;
    RETURN NEW;
END
$$;

CREATE TRIGGER push_notifications_preview_until
    BEFORE UPDATE OF started_at ON push_notifications
    FOR EACH ROW WHEN (OLD.started_at IS NULL AND NEW.started_at IS NOT NULL AND NEW.content_mode = 'ids_only')
    EXECUTE FUNCTION push_preview_until();

-- push_erase_revoked(): the text of sql/functions/push_erase_revoked.sql.
CREATE FUNCTION push_erase_revoked() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM push_erase_content(ARRAY[NEW.id]);
    RETURN NULL;
END
$$;

CREATE TRIGGER push_notifications_erase_revoked
    AFTER UPDATE OF finished_at ON push_notifications
    FOR EACH ROW WHEN (OLD.finished_at IS NULL AND NEW.finished_at IS NOT NULL AND NEW.revoked_at IS NOT NULL
                       AND NEW.content_erased_at IS NULL)
    EXECUTE FUNCTION push_erase_revoked();
