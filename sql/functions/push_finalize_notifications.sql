-- push_finalize_notifications: notifications' final states as PushCore decided them
-- (NotificationOutcome, R-SEND-6) from the endings push_record returned, one element per
-- notification: status ('sent', 'sms_fallback' or 'failed'), error code, and device_count, the
-- deliveries that net one charge (R-SEND-9), counted by PushCore from the same endings. A
-- notification already final is left as it is. 'sms_fallback' queues the SMS once.
CREATE FUNCTION push_finalize_notifications(p_ids uuid[], p_statuses text[], p_error_codes text[],
                                            p_device_counts int[], p_now timestamptz DEFAULT now())
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM unnest(p_statuses) s WHERE s IS NULL OR s NOT IN ('sent', 'sms_fallback', 'failed')) THEN
        RAISE EXCEPTION 'VALIDATION_ERROR: a final status is sent, sms_fallback or failed';
    END IF;
    UPDATE push_notifications n
       SET status = f.status, error_code = f.code, finished_at = p_now, remaining_batches = 0,
           device_count = f.device_count
      FROM unnest(p_ids, p_statuses, p_error_codes, p_device_counts) AS f(id, status, code, device_count)
     WHERE n.id = f.id AND n.finished_at IS NULL;
    INSERT INTO push_sms_outbox (notification_id, app_id, phone, text)
    SELECT n.id, n.app_id, n.sms_phone, n.sms_text
      FROM unnest(p_ids, p_statuses) AS f(id, status)
      JOIN push_notifications n ON n.id = f.id
     WHERE f.status = 'sms_fallback' AND n.sms_phone IS NOT NULL
    ON CONFLICT (notification_id) DO NOTHING;
END
$$;
