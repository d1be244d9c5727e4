-- push_delete_device: deletion deactivates (R-DEV-7); registering the token again reactivates it.
-- Locks the device row, then the count row (the registry's lock order). Returns false when no
-- active device of that app and mode has that id.
CREATE FUNCTION push_delete_device(p_app_id uuid, p_mode text, p_device_id uuid) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE push_devices SET active = false, deactivated_at = clock_timestamp(), deactivation_reason = 'DELETED'
     WHERE id = p_device_id AND app_id = p_app_id AND mode = p_mode AND active;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    UPDATE push_device_counts SET active_count = greatest(active_count - 1, 0)
     WHERE app_id = p_app_id AND mode = p_mode;
    RETURN true;
END
$$;
