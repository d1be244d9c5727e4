-- push_notification.finished (opt-in): when a notification becomes final, whatever path ended it
-- (push_finalize_notification, push_cancel). The WHEN clause is evaluated without calling the
-- function; the function writes the event only when an endpoint asked for this type.
CREATE FUNCTION push_notification_finished_event() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM push_webhook_endpoints ep
                WHERE ep.app_id = NEW.app_id AND ep.mode = NEW.mode AND ep.enabled
                  AND 'push_notification.finished' = ANY (ep.event_types)) THEN
        INSERT INTO push_events (app_id, type, payload)
        VALUES (NEW.app_id, 'push_notification.finished',
                jsonb_build_object('notification_id', NEW.id, 'mode', NEW.mode, 'status', NEW.status,
                                   'device_count', NEW.device_count, 'error_code', NEW.error_code));
    END IF;
    RETURN NULL;
END
$$;
