-- push_lock_record_rows: levels 4 to 6 of the lock order for recording batches, each sorted,
-- before the writes that would otherwise take them in plan order: the devices a verdict may
-- deactivate (by id), their apps' count rows (by app, mode), and the credential rows about to
-- change (by app, kind; `p_invalid_apps`/`p_accepted_apps` give each kind's app). Rows that no
-- write will touch are not locked (an accepted kind whose set is already verified, the common case).
CREATE FUNCTION push_lock_record_rows(p_deactivate_ids uuid[], p_invalid_apps uuid[], p_invalid_kinds text[],
                                      p_accepted_apps uuid[], p_accepted_kinds text[])
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF cardinality(p_deactivate_ids) > 0 THEN
        PERFORM 1 FROM push_devices d WHERE d.id = ANY (p_deactivate_ids) ORDER BY d.id FOR UPDATE;
        PERFORM 1 FROM push_device_counts c
         WHERE (c.app_id, c.mode) IN (SELECT d.app_id, d.mode FROM push_devices d WHERE d.id = ANY (p_deactivate_ids))
         ORDER BY c.app_id, c.mode FOR UPDATE;
    END IF;
    IF cardinality(p_invalid_kinds) > 0 OR cardinality(p_accepted_kinds) > 0 THEN
        PERFORM 1 FROM push_credentials c
         WHERE (c.state <> 'invalid'
                AND (c.app_id, c.kind) IN (SELECT * FROM unnest(p_invalid_apps, p_invalid_kinds)))
            OR ((c.first_accepted_at IS NULL OR c.state = 'unverified')
                AND (c.app_id, c.kind) IN (SELECT * FROM unnest(p_accepted_apps, p_accepted_kinds)))
         ORDER BY c.app_id, c.kind FOR UPDATE;
    END IF;
END
$$;
