-- push_sms_begin: the SMS of each claimed row whose lease is still held (and not expired) and
-- which is pending becomes 'sending', one more attempt, committed before any request is written.
-- Locks the outbox rows (by id), then the SMS rows: a rescue (push_sms_rescue) meets either the
-- lock or the 'sending' mark. Returns the outbox ids begun; the others must not be sent.
CREATE FUNCTION push_sms_begin(p_outbox_ids bigint[], p_tokens uuid[], p_now timestamptz DEFAULT now())
RETURNS TABLE (outbox_id bigint)
LANGUAGE sql AS $$
    WITH held AS (
        SELECT o.id, o.ref_id FROM push_outbox o
          JOIN unnest(p_outbox_ids, p_tokens) AS u(id, token) ON u.id = o.id
         WHERE o.kind = 'sms' AND o.lease_token = u.token AND o.lease_expires_at > p_now
         ORDER BY o.id
           FOR UPDATE OF o
    ), begun AS (
        UPDATE push_sms_outbox s SET status = 'sending', attempts = s.attempts + 1, updated_at = p_now
          FROM held WHERE s.id = held.ref_id AND s.status = 'pending'
        RETURNING s.id
    )
    SELECT held.id FROM held JOIN begun ON begun.id = held.ref_id
$$;
