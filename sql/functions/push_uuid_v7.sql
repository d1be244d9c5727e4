-- push_uuid_v7 (sql/0026, issue 17 part 6): a time-ordered UUID, version 7 (RFC 9562 §5.7): the
-- first 48 bits are the Unix time in milliseconds of p_at (big-endian), then the version nibble 7,
-- and 74 random bits from gen_random_uuid() (its variant bits 10 kept). Notification ids are made
-- with it, so that the primary keys that lead with a notification id (push_notifications_pkey,
-- push_deliveries_pkey, push_ledger_pkey) take each new notification's entries at their right edge,
-- in pages that are in memory, instead of at a random leaf of an index larger than shared_buffers
-- (measured in docs/bench.md, "History (part 6)"). Ids of one millisecond are unordered among
-- themselves; nothing relies on their order, only on their locality.
-- sql/0027: one expression, so that the planner inlines it (a SQL function whose body has a FROM
-- clause is not inlined: 0026's was run by the SQL-function executor, its body parsed and planned
-- again in every statement that called it, about 90 µs per push_enqueue, the column default of
-- its INSERT; docs/bench.md, "Enqueue, 2026-12-03"). The text form of a v4 UUID is 8-4-4-4-12 hex digits with
-- the version digit '4' at position 15: the first 12 digits become the milliseconds, the version
-- digit '7', and positions 16 on (the v4's last 3 digits of that group, its variant digit and the
-- rest, 74 random bits) are kept. uuid_in accepts a hyphen after any group of four digits.
CREATE OR REPLACE FUNCTION push_uuid_v7(p_at timestamptz DEFAULT clock_timestamp()) RETURNS uuid
LANGUAGE sql VOLATILE PARALLEL SAFE AS $$
    SELECT (lpad(to_hex(floor(extract(epoch FROM p_at) * 1000)::bigint), 12, '0') || '7'
            || substring(gen_random_uuid()::text FROM 16))::uuid
$$;
