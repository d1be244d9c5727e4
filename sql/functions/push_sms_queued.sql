-- Every SMS queued, by any path (push_finalize_notification of this release or the previous one),
-- gets its outbox row in the same transaction, and the dispatchers are woken at commit.
CREATE FUNCTION push_sms_queued() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO push_outbox (kind, fair_key, ref_id, run_at, created_at)
    VALUES ('sms', NEW.app_id, NEW.id, NEW.created_at, NEW.created_at)
    ON CONFLICT (kind, ref_id, fair_key) DO NOTHING;
    PERFORM pg_notify('pushfleet_sms', '');
    RETURN NULL;
END
$$;
