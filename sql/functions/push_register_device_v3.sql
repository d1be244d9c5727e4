-- push_register_device_v3: push_register_device_v2 (sql/0006, 0016) and the device's preview token
-- (issue 24 part 2, R-IDS-2) in one statement. The caller passes the SHA-256 of a fresh token on
-- every call (32 bytes, or NULL for none); it is stored, replacing the device's previous one, only
-- when the registration created the device or `p_rotate` asks for a new one, and
-- `preview_token_set` says whether it was (the caller answers the token only then: it is never
-- stored in clear, so it cannot be shown again). A rotation invalidates the old token at once.
CREATE FUNCTION push_register_device_v3(
    p_app_id uuid, p_mode text, p_platform text, p_token text, p_endpoint text, p_p256dh bytea,
    p_auth_secret bytea, p_user_id text, p_apns_environment text, p_key_action text,
    p_public_key bytea, p_kid text, p_app_limit bigint, p_user_limit int,
    p_preview_token_hash bytea, p_rotate boolean)
RETURNS TABLE (device_id uuid, created boolean, reactivated boolean, evicted uuid[], app_id uuid, platform text,
               user_id text, apns_environment text, active boolean, kid text, created_at timestamptz,
               last_registered_at timestamptz, preview_token_set boolean)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    r record;
    v_set boolean;
BEGIN
    IF p_preview_token_hash IS NOT NULL AND octet_length(p_preview_token_hash) <> 32 THEN
        PERFORM push_refuse('preview_token', 'its hash must be 32 bytes (SHA-256)');
    END IF;
    IF p_rotate IS NULL THEN
        PERFORM push_refuse('rotate_preview_token', 'must be true or false');
    END IF;
    SELECT * INTO r FROM push_register_device_v2(p_app_id, p_mode, p_platform, p_token, p_endpoint, p_p256dh,
                                                 p_auth_secret, p_user_id, p_apns_environment, p_key_action,
                                                 p_public_key, p_kid, p_app_limit, p_user_limit);
    v_set := p_preview_token_hash IS NOT NULL AND (r.created OR p_rotate);
    IF v_set THEN
        UPDATE push_devices d SET preview_token_hash = p_preview_token_hash WHERE d.id = r.device_id;
    END IF;
    RETURN QUERY SELECT r.device_id, r.created, r.reactivated, r.evicted, r.app_id, r.platform, r.user_id,
                        r.apns_environment, r.active, r.kid, r.created_at, r.last_registered_at, v_set;
END
$$;
