-- `webhooks resend EVENT`: the event again, with the same webhook-id, to p_endpoint (any enabled
-- endpoint of the event's app and mode) or, when NULL, to every enabled endpoint whose row for it
-- is final. Rows still pending are left as they are. The retry window starts again. Returns the
-- rows queued. Raises NOT_FOUND (no such event: never recorded, or deleted after its retention,
-- or no such endpoint for it) and VALIDATION_ERROR (the endpoint is disabled).
CREATE FUNCTION push_webhook_resend(p_event uuid, p_endpoint uuid, p_now timestamptz DEFAULT now())
RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
    v_event push_events;
    v_enabled boolean;
    v_n int;
BEGIN
    SELECT * INTO v_event FROM push_events WHERE public_id = p_event FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'NOT_FOUND: no webhook event % (deleted after its retention, or never recorded)', p_event;
    END IF;
    IF p_endpoint IS NOT NULL THEN
        SELECT enabled INTO v_enabled FROM push_webhook_endpoints
         WHERE id = p_endpoint AND app_id = v_event.app_id AND mode = push_event_mode(v_event.payload);
        IF NOT FOUND THEN
            RAISE EXCEPTION 'NOT_FOUND: no webhook endpoint % for this event''s app and mode', p_endpoint;
        END IF;
        IF NOT v_enabled THEN
            RAISE EXCEPTION 'VALIDATION_ERROR: webhook endpoint % is disabled; enable it first', p_endpoint;
        END IF;
        INSERT INTO push_outbox AS o (kind, fair_key, ref_id, run_at)
        VALUES ('webhook', p_endpoint, v_event.id, p_now)
        ON CONFLICT (kind, ref_id, fair_key) DO UPDATE
           SET state = 'available', run_at = p_now, failures = 0, window_started_at = NULL, finished_at = NULL,
               last_error = NULL
         WHERE o.state IN ('done', 'failed');
    ELSE
        UPDATE push_outbox o
           SET state = 'available', run_at = p_now, failures = 0, window_started_at = NULL, finished_at = NULL,
               last_error = NULL
          FROM push_webhook_endpoints ep
         WHERE o.kind = 'webhook' AND o.ref_id = v_event.id AND o.state IN ('done', 'failed')
           AND ep.id = o.fair_key AND ep.enabled;
    END IF;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    IF v_n > 0 THEN
        UPDATE push_events SET delivered_at = NULL WHERE id = v_event.id;
        PERFORM pg_notify('pushfleet_webhooks', '');
    END IF;
    RETURN v_n;
END
$$;
