-- push_erase_user: erases one user of an app and mode, for a data-protection request (issue 15
-- part 6). A notification addressed to that user alone loses its content (title, body, data, the
-- kind fields that carry text) and its SMS phone and text, and no longer names the user; its SMS
-- fallback (push_sms_outbox, sql/0012), once final, loses its phone, text and test-mode request
-- (one still in flight is erased by retention when it ends); one addressed to several keeps its
-- content and drops the user from `user_ids`; every delivery to the user's devices of a
-- notification naming the user loses its stored payload (test mode's request bodies), and so does
-- every delivery of the notifications erased (primary key probes); then the user's active devices
-- are deactivated (reason USER_ERASED), the app's active count with them. Idempotent: a second
-- call finds nothing left and answers zeros. Locks follow sql/LOCK_ORDER.md and the registry's:
-- notification rows (by id), then final SMS rows (as retention's erasure), then delivery rows,
-- then device rows (by id), then the count row. The notifications are found through
-- push_notifications_list_idx (app_id, mode) and filtered on user_ids: an erasure is rare, and an
-- index on user_ids would be paid by every enqueue.
CREATE FUNCTION push_erase_user(p_app_id uuid, p_mode text, p_user_id text)
RETURNS TABLE (devices_deactivated int, notifications_erased int, notifications_unnamed int, payloads_erased int)
LANGUAGE plpgsql AS $$
DECLARE
    v_devices uuid[];
    v_alone uuid[];
    v_several uuid[];
BEGIN
    IF p_user_id IS NULL OR char_length(p_user_id) NOT BETWEEN 1 AND 255 THEN
        PERFORM push_refuse('user_id', 'must be 1 to 255 characters');
    END IF;
    IF p_mode IS NULL OR p_mode NOT IN ('test', 'live') THEN
        PERFORM push_refuse('mode', 'must be test or live');
    END IF;
    SELECT coalesce(array_agg(n.id ORDER BY n.id) FILTER (WHERE n.user_ids <@ ARRAY[p_user_id]), '{}'),
           coalesce(array_agg(n.id ORDER BY n.id) FILTER (WHERE NOT n.user_ids <@ ARRAY[p_user_id]), '{}')
      INTO v_alone, v_several
      FROM push_notifications n
     WHERE n.app_id = p_app_id AND n.mode = p_mode AND p_user_id = ANY (n.user_ids);
    PERFORM 1 FROM push_notifications n WHERE n.id = ANY (v_alone || v_several) ORDER BY n.id FOR UPDATE;
    UPDATE push_notifications
       SET title = NULL, body = NULL, data = NULL, sound = NULL, thread_id = NULL, category = NULL,
           target_content_id = NULL, critical_sound_name = NULL, title_loc_key = NULL, title_loc_args = NULL,
           body_loc_key = NULL, body_loc_args = NULL, channel_id = NULL, sms_phone = NULL, sms_text = NULL,
           user_ids = '{}', content_erased_at = coalesce(content_erased_at, now())
     WHERE id = ANY (v_alone);
    -- Their SMS fallbacks that ended lose the phone, the text and test mode's request body
    -- (sql/0012; push_sms_outbox's unique notification_id). One still pending or sending is
    -- skipped (the dispatcher holds it; its visible row is not final, so this never waits on it)
    -- and retention's eraseFinalSMS erases it once it ends, its notification's content being erased.
    UPDATE push_sms_outbox SET phone = NULL, text = NULL, request = NULL, content_erased_at = now()
     WHERE notification_id = ANY (v_alone) AND finished_at IS NOT NULL AND content_erased_at IS NULL;
    notifications_erased := cardinality(v_alone);
    UPDATE push_notifications SET user_ids = array_remove(user_ids, p_user_id) WHERE id = ANY (v_several);
    notifications_unnamed := cardinality(v_several);
    SELECT coalesce(array_agg(d.id ORDER BY d.id), '{}') INTO v_devices
      FROM push_devices d WHERE d.app_id = p_app_id AND d.mode = p_mode AND d.user_id = p_user_id;
    WITH erased AS (
        UPDATE push_deliveries v SET payload = NULL
         WHERE v.notification_id = ANY (v_alone || v_several) AND v.payload IS NOT NULL
           AND (v.device_id = ANY (v_devices) OR v.notification_id = ANY (v_alone))
        RETURNING 1
    )
    SELECT count(*)::int INTO payloads_erased FROM erased;
    PERFORM 1 FROM push_devices d WHERE d.id = ANY (v_devices) AND d.active ORDER BY d.id FOR UPDATE;
    WITH gone AS (
        UPDATE push_devices SET active = false, deactivated_at = clock_timestamp(), deactivation_reason = 'USER_ERASED'
         WHERE id = ANY (v_devices) AND active
        RETURNING 1
    )
    SELECT count(*)::int INTO devices_deactivated FROM gone;
    IF devices_deactivated > 0 THEN
        UPDATE push_device_counts SET active_count = greatest(active_count - devices_deactivated, 0)
         WHERE app_id = p_app_id AND mode = p_mode;
    END IF;
    RETURN NEXT;
END
$$;
