-- push_register_device (0003), for the previous release's callers: the same registration, now
-- through push_register_device_v2 and its bounds. Same signature and results. The previous
-- release's default limits (R-DEV-5/6: 1,000,000 live, 1,000 test, 20 per user) stay here, in its
-- entry point, for its callers that pass none; this release passes PushCore's DeviceLimits to
-- push_register_device_v2 and never calls this function. Dropped at the contract step.
CREATE OR REPLACE FUNCTION push_register_device(
    p_app_id uuid, p_mode text, p_platform text, p_token text, p_endpoint text, p_p256dh bytea,
    p_auth_secret bytea, p_user_id text, p_apns_environment text, p_key_action text,
    p_public_key bytea, p_kid text, p_app_limit bigint DEFAULT NULL, p_user_limit int DEFAULT 20)
RETURNS TABLE (device_id uuid, created boolean, reactivated boolean, evicted uuid[])
LANGUAGE sql AS $$
    SELECT r.device_id, r.created, r.reactivated, r.evicted
      FROM push_register_device_v2(p_app_id, p_mode, p_platform, p_token, p_endpoint, p_p256dh, p_auth_secret,
                                   p_user_id, p_apns_environment, p_key_action, p_public_key, p_kid,
                                   coalesce(p_app_limit, CASE WHEN p_mode = 'live' THEN 1000000 ELSE 1000 END),
                                   coalesce(p_user_limit, 20)) AS r
$$;
