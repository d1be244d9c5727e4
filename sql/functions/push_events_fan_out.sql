-- R-HOOK-1, R-PRV-4: in the transaction that records an event, one outbox row per enabled
-- endpoint of its app and mode subscribed to its type (push_webhook_endpoints_app_idx); an event no
-- endpoint wants is deleted at once (issue 19: not kept). A row trigger: the statements that
-- insert events run on hot paths (push_record_batch) and mostly insert none.
CREATE FUNCTION push_events_fan_out() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO push_outbox (kind, fair_key, ref_id, run_at, created_at)
    SELECT 'webhook', ep.id, NEW.id, NEW.created_at, NEW.created_at
      FROM push_webhook_endpoints ep
     WHERE ep.app_id = NEW.app_id AND ep.mode = push_event_mode(NEW.payload) AND ep.enabled
       AND NEW.type = ANY (ep.event_types);
    IF FOUND THEN
        PERFORM pg_notify('pushfleet_webhooks', '');
    ELSE
        DELETE FROM push_events WHERE id = NEW.id;
    END IF;
    RETURN NULL;
END
$$;
