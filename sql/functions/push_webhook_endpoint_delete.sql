-- Deletes an endpoint with its pending outbox rows (push_outbox_due_idx, push_outbox_running_idx;
-- an attempt in flight then records nothing); events left with no row are deleted, the others
-- finished when their remaining rows are. Its final rows and their attempt log go with their
-- events' retention. False for an unknown id.
CREATE FUNCTION push_webhook_endpoint_delete(p_id uuid, p_now timestamptz DEFAULT now())
RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    v_events bigint[];
BEGIN
    DELETE FROM push_webhook_endpoints WHERE id = p_id;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    WITH gone AS (DELETE FROM push_outbox WHERE kind = 'webhook' AND fair_key = p_id AND state IN ('available', 'running')
                  RETURNING ref_id)
    SELECT array_agg(ref_id) INTO v_events FROM gone;
    IF v_events IS NOT NULL THEN
        PERFORM push_webhook_finish_events(v_events, p_now);
    END IF;
    RETURN true;
END
$$;
