-- push_revoke: revokes a notification's content for preview fetches (issue 24 part 4, R-IDS-2):
-- for every device (p_user_ids NULL: revoked_at set, kept at its first value) or for the devices
-- of the users named (added to revoked_user_ids, each once). Later fetches answer the same 404 as
-- any other refusal; nothing else changes (the deliveries, the ledger, the retention's erasure).
-- Bounds (R-LIM-1): 1 to 1,000 user ids of 1 to 255 characters per call, and at most 1,000 revoked
-- users on a notification in all. Returns false for an unknown notification. Locks the
-- notification row only (sql/LOCK_ORDER.md).
CREATE FUNCTION push_revoke(p_notification_id uuid, p_user_ids text[])
RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    v_users text[];
BEGIN
    IF p_user_ids IS NOT NULL THEN
        IF cardinality(p_user_ids) NOT BETWEEN 1 AND 1000 THEN
            PERFORM push_refuse('user_ids', 'must hold 1 to 1000 user ids');
        END IF;
        IF EXISTS (SELECT 1 FROM unnest(p_user_ids) u WHERE u IS NULL OR char_length(u) NOT BETWEEN 1 AND 255) THEN
            PERFORM push_refuse('user_ids', 'each must be 1 to 255 characters');
        END IF;
    END IF;
    SELECT n.revoked_user_ids INTO v_users FROM push_notifications n WHERE n.id = p_notification_id FOR UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    IF p_user_ids IS NULL THEN
        UPDATE push_notifications n SET revoked_at = coalesce(n.revoked_at, now()) WHERE n.id = p_notification_id;
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
