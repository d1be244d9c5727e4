-- push_preview_until: the trigger that writes a notification's preview window end when its send
-- time comes (started_at set, R-SEND-2's moment): for a notification whose content mode is
-- `ids_only` (issue 24 part 4), least(started_at + the app's preview_window_seconds, expires_at),
-- so its content stays for the device's fetch that long and never past its TTL; NULL for every
-- other mode (the content is erased as soon as the retention allows, as before). The content mode
-- is read as the row's `content_mode` member through to_jsonb, so this function is valid with or
-- without that column (sql/0019 adds it); a row without it has no window. The Maintainer's erasure
-- waits for greatest(finished_at, preview_until) (push_notifications_erasable_v2_idx).
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
