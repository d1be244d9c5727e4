-- The previous release's entry point: this release's worker calls push_start_notifications,
-- push_record and push_finalize_notifications instead (sql/0010). Kept, unchanged, for workers
-- below schema 10; dropped at the contract step.
--
-- push_finalize_notification: the notification's final state, decided by PushCore
-- (NotificationOutcome, R-SEND-6) from the endings push_record_batch returned. device_count is the
-- number of deliveries that net one charge (R-SEND-9). 'sms_fallback' queues the SMS once.
CREATE FUNCTION push_finalize_notification(p_notification_id uuid, p_status text, p_error_code text,
                                           p_now timestamptz DEFAULT now())
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE push_notifications n
       SET status = p_status, error_code = p_error_code, finished_at = p_now, remaining_batches = 0,
           device_count = (SELECT count(*) FROM push_ledger c
                            WHERE c.notification_id = n.id AND c.kind = 'charge'
                              AND NOT EXISTS (SELECT 1 FROM push_ledger r WHERE r.notification_id = n.id
                                                 AND r.device_id = c.device_id AND r.kind = 'refund'))
     WHERE n.id = p_notification_id AND n.finished_at IS NULL;
    IF p_status = 'sms_fallback' THEN
        INSERT INTO push_sms_outbox (notification_id, app_id, phone, text)
        SELECT id, app_id, sms_phone, sms_text FROM push_notifications
         WHERE id = p_notification_id AND sms_phone IS NOT NULL
        ON CONFLICT (notification_id) DO NOTHING;
    END IF;
END
$$;
