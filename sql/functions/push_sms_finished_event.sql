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
