-- push_loc_text_bytes: the UTF-8 bytes of a notification's loc keys and every loc argument: their
-- part of the content floor (they are what a plaintext Android notification shows, and PushCore's
-- FCM measure counts them, `FCMMessage.ruleSize`).
-- Restated by sql/0021 (issue 17) without subqueries, so that the planner inlines it: a SQL function
-- it cannot inline is parsed and planned again at every call from PL/pgSQL (40-80 us per
-- push_enqueue). array_to_string skips null elements as sum() did, so the sum of the arguments' bytes
-- is the bytes of their concatenation; STABLE as array_to_string is.
CREATE OR REPLACE FUNCTION push_loc_text_bytes(p_title_loc_key text, p_title_loc_args text[], p_body_loc_key text,
                                    p_body_loc_args text[]) RETURNS bigint
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT coalesce(octet_length(p_title_loc_key), 0)::bigint + coalesce(octet_length(p_body_loc_key), 0)
         + coalesce(octet_length(array_to_string(p_title_loc_args, '')), 0)
         + coalesce(octet_length(array_to_string(p_body_loc_args, '')), 0)
$$;
