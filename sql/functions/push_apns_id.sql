-- Stable apns-id per (notification, device): the same across retries and worker crashes.
CREATE FUNCTION push_apns_id(p_notification uuid, p_device uuid) RETURNS uuid
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT md5(p_notification::text || ':' || p_device::text)::uuid
$$;
