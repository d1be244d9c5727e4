-- push_json_text_bytes: the UTF-8 bytes of `p` written as a JSON string's contents, escaped as
-- every payload writes it (R-ENC-9: `"`, `\` and characters below 0x20; PostgreSQL's JSON output
-- escapes exactly those, to the same lengths). The measure of the fields that travel in clear
-- beside an encrypted iOS payload (R-LIM-1).
-- STABLE since sql/0021 (issue 17), as its body is (to_json is STABLE): declared IMMUTABLE, the
-- planner refused to inline it, and every call from PL/pgSQL parsed and planned the body again (about
-- a present sound alone cost push_enqueue about 200 us of PostgreSQL CPU more than none).
CREATE OR REPLACE FUNCTION push_json_text_bytes(p text) RETURNS int
LANGUAGE sql STABLE STRICT PARALLEL SAFE AS $$
    SELECT octet_length(to_json(p)::text) - 2
$$;
