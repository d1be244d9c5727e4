-- push_loc_text_bytes: the UTF-8 bytes of a notification's loc keys and every loc argument: their
-- part of the content floor (they are what a plaintext Android notification shows, and PushCore's
-- FCM measure counts them, `FCMMessage.ruleSize`).
CREATE FUNCTION push_loc_text_bytes(p_title_loc_key text, p_title_loc_args text[], p_body_loc_key text,
                                    p_body_loc_args text[]) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(octet_length(p_title_loc_key), 0)::bigint + coalesce(octet_length(p_body_loc_key), 0)
         + coalesce((SELECT sum(octet_length(a)) FROM unnest(p_title_loc_args) a), 0)
         + coalesce((SELECT sum(octet_length(a)) FROM unnest(p_body_loc_args) a), 0)
$$;
