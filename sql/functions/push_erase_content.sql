-- push_erase_content: erases the content of the notifications p_ids names (sql/0022): title, body,
-- data, sound, thread id, the kind texts (category, target content id, critical sound name, loc
-- keys and args, channel id) and the SMS fallback's phone and text (R-SMS-1), marks them
-- `content_erased_at`, and clears the request bodies test mode stored per delivery
-- (`push_deliveries.payload`, which hold the same content). The one definition of what erasing a
-- notification's content erases, for the retention's erasure (the Maintainer) and a whole
-- revocation (push_revoke) alike. A notification already erased is left as it is. Returns how
-- many notifications and delivery payloads it erased. The caller holds the rows' locks.
CREATE FUNCTION push_erase_content(p_ids uuid[])
RETURNS TABLE (erased int, payloads int)
LANGUAGE sql AS $$
    WITH gone AS (
        UPDATE push_notifications
           SET title = NULL, body = NULL, data = NULL, sound = NULL, thread_id = NULL, category = NULL,
               target_content_id = NULL, critical_sound_name = NULL, title_loc_key = NULL, title_loc_args = NULL,
               body_loc_key = NULL, body_loc_args = NULL, channel_id = NULL, sms_phone = NULL, sms_text = NULL,
               content_erased_at = now()
         WHERE id = ANY (p_ids) AND content_erased_at IS NULL
        RETURNING id
    ), cleared AS (
        UPDATE push_deliveries d SET payload = NULL
          FROM gone WHERE d.notification_id = gone.id AND d.payload IS NOT NULL
        RETURNING 1
    )
    SELECT (SELECT count(*) FROM gone)::int, (SELECT count(*) FROM cleared)::int
$$;
