-- The available rows of endpoints that no longer take events fail ('ENDPOINT_DISABLED') and their
-- events are finished (push_outbox_due_idx). Returns the rows failed.
CREATE FUNCTION push_webhook_fail_pending(p_endpoints uuid[], p_now timestamptz DEFAULT now())
RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
    v_events bigint[];
BEGIN
    PERFORM 1 FROM push_webhook_endpoints WHERE id = ANY (p_endpoints) ORDER BY id FOR UPDATE;
    WITH failed AS (
        UPDATE push_outbox o SET state = 'failed', last_error = 'ENDPOINT_DISABLED', finished_at = p_now
         WHERE o.kind = 'webhook' AND o.state = 'available' AND o.fair_key = ANY (p_endpoints)
        RETURNING o.ref_id
    )
    SELECT array_agg(ref_id) INTO v_events FROM failed;
    IF v_events IS NULL THEN
        RETURN 0;
    END IF;
    PERFORM push_webhook_finish_events(v_events, p_now);
    RETURN cardinality(v_events);
END
$$;
