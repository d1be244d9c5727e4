-- push_preview_until: the trigger that writes a notification's preview window end when its send
-- time comes (started_at set, R-SEND-2's moment): for a notification whose content mode is
-- `ids_only` (issue 24 part 4), least(started_at + the app's preview_window_seconds, expires_at),
-- so its content stays for the device's fetch that long and never past its TTL; NULL for every
-- other mode (the content is erased as soon as the retention allows, as before). Since sql/0022 the
-- trigger fires only for those rows (its WHEN: the start, OLD.started_at NULL and NEW.started_at
-- set, of a row whose content_mode the same UPDATE writes as ids_only, as push_start_notifications
-- does), so a sealed start costs no call; the function reads the column itself (sql/0020 read it
-- through to_jsonb(NEW) on every start). The Maintainer's erasure waits for
-- greatest(finished_at, preview_until) (push_notifications_erasable_v2_idx).
CREATE OR REPLACE FUNCTION push_preview_until() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    SELECT least(NEW.started_at + make_interval(secs => a.preview_window_seconds), NEW.expires_at)
      INTO NEW.preview_until
      FROM push_apps a WHERE a.id = NEW.app_id;
    RETURN NEW;
END
$$;
