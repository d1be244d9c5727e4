-- push_revoke: revokes a notification's content for preview fetches (issue 24 part 4, R-IDS-2):
-- for every device (p_user_ids NULL: revoked_at set, kept at its first value, and the content
-- erased at once in this transaction, push_erase_content, sql/0022: a revoked notification's
-- content is no longer held) or for the devices of the users named (added to revoked_user_ids,
-- each once; the content stays for the other devices' fetches). Later fetches answer the same 404
-- as any other refusal; the deliveries and the ledger stay. A whole revocation of a notification
-- that is not final yet (pending or sending) takes effect for fetches at once and its content is
-- erased when it becomes final (push_erase_revoked, the trigger of sql/0022), since its remaining
-- batches still push it; revoking never stops a push (cancel a pending notification for that).
-- Bounds (R-LIM-1): 1 to 1,000 user ids of 1 to 255 characters per call, and at most 1,000 revoked
-- users on a notification in all. Returns false for an unknown notification. Locks the
-- notification row only (sql/LOCK_ORDER.md).
CREATE OR REPLACE FUNCTION push_revoke(p_notification_id uuid, p_user_ids text[])
RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    v_users text[];
    v_finished timestamptz;
BEGIN
    IF p_user_ids IS NOT NULL THEN
        IF cardinality(p_user_ids) NOT BETWEEN 1 AND 1000 THEN
            PERFORM push_refuse('user_ids', 'must hold 1 to 1000 user ids');
        END IF;
        IF EXISTS (SELECT 1 FROM unnest(p_user_ids) u WHERE u IS NULL OR char_length(u) NOT BETWEEN 1 AND 255) THEN
            PERFORM push_refuse('user_ids', 'each must be 1 to 255 characters');
        END IF;
    END IF;
    SELECT n.revoked_user_ids, n.finished_at INTO v_users, v_finished
      FROM push_notifications n WHERE n.id = p_notification_id FOR UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    IF p_user_ids IS NULL THEN
        UPDATE push_notifications n SET revoked_at = coalesce(n.revoked_at, now()) WHERE n.id = p_notification_id;
        IF v_finished IS NOT NULL THEN
            PERFORM push_erase_content(ARRAY[p_notification_id]);
        END IF;
        RETURN true;
    END IF;
    v_users := ARRAY(SELECT DISTINCT u FROM unnest(v_users || p_user_ids) u ORDER BY u);
    IF cardinality(v_users) > 1000 THEN
        PERFORM push_refuse('user_ids', 'at most 1000 revoked users per notification');
    END IF;
    UPDATE push_notifications n SET revoked_user_ids = v_users WHERE n.id = p_notification_id;
    RETURN true;
END
$$;
