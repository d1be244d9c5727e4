-- Events whose every webhook row is final get delivered_at (the retention clock, MaintenanceStore);
-- an event left with no row at all (its endpoints were deleted) is deleted. Primary key of
-- push_events, push_outbox (kind, ref_id, fair_key).
CREATE FUNCTION push_webhook_finish_events(p_event_ids bigint[], p_now timestamptz DEFAULT now())
RETURNS void
LANGUAGE sql AS $$
    -- sql/LOCK_ORDER.md: the events, by id, before any write.
    SELECT 1 FROM push_events WHERE id = ANY (p_event_ids) ORDER BY id FOR UPDATE;
    WITH ids AS (SELECT DISTINCT e FROM unnest(p_event_ids) AS e), gone AS (
        DELETE FROM push_events ev USING ids
         WHERE ev.id = ids.e
           AND NOT EXISTS (SELECT 1 FROM push_outbox o WHERE o.kind = 'webhook' AND o.ref_id = ev.id)
        RETURNING ev.id
    )
    UPDATE push_events ev SET delivered_at = p_now
      FROM ids
     WHERE ev.id = ids.e AND ev.delivered_at IS NULL AND ev.id NOT IN (SELECT id FROM gone)
       AND NOT EXISTS (SELECT 1 FROM push_outbox o
                        WHERE o.kind = 'webhook' AND o.ref_id = ev.id AND o.finished_at IS NULL);
$$;
