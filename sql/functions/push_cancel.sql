-- push_cancel: cancel a notification whose send time has not come (its job not yet taken up).
-- Refunds every acceptance charge. Returns false when it is too late (already started or final).
CREATE FUNCTION push_cancel(p_notification_id uuid, p_now timestamptz DEFAULT now())
RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    v_n push_notifications;
BEGIN
    SELECT * INTO v_n FROM push_notifications WHERE id = p_notification_id FOR UPDATE;
    IF NOT FOUND OR v_n.status <> 'pending' THEN
        RETURN false;
    END IF;
    -- The notification job must still be waiting; a running one belongs to a worker.
    UPDATE push_jobs SET state = 'cancelled', finalized_at = p_now
     WHERE notification_id = p_notification_id AND kind = 'notification' AND state = 'available';
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    UPDATE push_notifications SET status = 'cancelled', error_code = 'CANCELLED', finished_at = p_now
     WHERE id = p_notification_id;
    INSERT INTO push_ledger (notification_id, device_id, kind, app_id, mode, reason)
    SELECT notification_id, device_id, 'refund', app_id, mode, 'CANCELLED'
      FROM push_ledger WHERE notification_id = p_notification_id AND kind = 'charge'
    ON CONFLICT DO NOTHING;
    RETURN true;
END
$$;
