-- push_uuid_v7 (sql/0026, issue 17 part 6): a time-ordered UUID, version 7 (RFC 9562 §5.7): the
-- first 48 bits are the Unix time in milliseconds of p_at (big-endian), then the version nibble 7,
-- and 74 random bits from gen_random_uuid() (its variant bits 10 kept). Notification ids are made
-- with it, so that the primary keys that lead with a notification id (push_notifications_pkey,
-- push_deliveries_pkey, push_ledger_pkey) take each new notification's entries at their right edge,
-- in pages that are in memory, instead of at a random leaf of an index larger than shared_buffers
-- (measured in docs/bench.md, "History (part 6)"). Ids of one millisecond are unordered among
-- themselves; nothing relies on their order, only on their locality.
CREATE FUNCTION push_uuid_v7(p_at timestamptz DEFAULT clock_timestamp()) RETURNS uuid
LANGUAGE sql VOLATILE PARALLEL SAFE AS $$
    SELECT encode(set_byte(b, 6, (get_byte(b, 6) & 15) | 112), 'hex')::uuid
      FROM (SELECT overlay(uuid_send(gen_random_uuid())
                           PLACING substring(int8send(floor(extract(epoch FROM p_at) * 1000)::bigint) FROM 3)
                           FROM 1 FOR 6) AS b) r
$$;
