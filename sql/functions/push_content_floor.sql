-- push_content_floor: a lower bound, in bytes, of the smallest measure any payload kind gives
-- this content (R-SEND-7): FCM plaintext, whose measure is the `data` keys and values (a
-- non-string value as its compact JSON text) plus the `notification` title and body; every other
-- kind measures more. Exact for title, body and string values; for other values, each escape
-- sequence counts one byte and whitespace none, so the bound never exceeds PushCore's measure
-- (`DeliveryPlanner.contentFloorCheck`). Over 4096, no device of any kind can take the content.
-- PL/pgSQL since sql/0013 (issue 17): as a SQL function it could not be inlined (its subquery), so
-- every push_enqueue parsed and planned its body again; PL/pgSQL keeps the plan for the session,
-- and content without data skips the subquery.
CREATE FUNCTION push_content_floor(p_title text, p_body text, p_data json) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
    IF p_data IS NULL THEN
        RETURN coalesce(octet_length(p_title), 0)::bigint + coalesce(octet_length(p_body), 0);
    END IF;
    RETURN coalesce(octet_length(p_title), 0)::bigint + coalesce(octet_length(p_body), 0)
         + coalesce((SELECT sum(octet_length(e.key) + CASE json_typeof(e.value)
                                WHEN 'string' THEN octet_length(e.value #>> '{}')
                                ELSE octet_length(regexp_replace(regexp_replace(e.value::text,
                                         '\\u[0-9a-fA-F]{4}|\\.', '.', 'g'), '[[:space:]]', '', 'g'))
                              END)
                       FROM json_each(p_data) e), 0);
END
$$;
