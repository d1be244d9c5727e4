-- Issue 17, part 6: time-ordered notification ids. With 10,000,000 delivery and ledger rows of
-- earlier notifications, workload (c) cost 1.22-1.40x the PostgreSQL CPU per delivery of the empty
-- database (docs/bench.md, "History (part 6)"): the three primary keys that lead with the
-- notification id (1.9-2.4 GB each against 128 MB of shared_buffers) took every new row at a random
-- leaf page, a buffer read and, after each checkpoint, a full-page image in the WAL per insert.
-- New notifications now get push_uuid_v7() ids; existing ids stay as they are (a v4 id and a v7
-- id never collide: the version nibbles differ). Nothing reads an id's bits: the API's pnot_ ids
-- are the same 32 hex digits, and a notification id is never a secret (the preview fetch needs its
-- token). Expand only: a worker of the previous release reads and writes the same columns.

CREATE FUNCTION push_uuid_v7(p_at timestamptz DEFAULT clock_timestamp()) RETURNS uuid
LANGUAGE sql VOLATILE PARALLEL SAFE AS $$
    SELECT encode(set_byte(b, 6, (get_byte(b, 6) & 15) | 112), 'hex')::uuid
      FROM (SELECT overlay(uuid_send(gen_random_uuid())
                           PLACING substring(int8send(floor(extract(epoch FROM p_at) * 1000)::bigint) FROM 3)
                           FROM 1 FOR 6) AS b) r
$$;

ALTER TABLE push_notifications ALTER COLUMN id SET DEFAULT push_uuid_v7();
