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
