-- push_api_take_tokens: a replica takes up to p_want tokens from the key's bucket (refilled at
-- p_rate per second up to p_burst) and spends them locally; it comes back when they are used up.
-- Every admitted request spent a token granted here, so replicas together never exceed the rate;
-- what a replica holds unspent is at most one chunk (the API asks for a tenth of a second's worth).
-- Returns the tokens granted and, when none, the seconds until the next one. The bucket row is
-- locked for the statement only; the commit does not wait for a WAL flush.
CREATE FUNCTION push_api_take_tokens(p_key_id uuid, p_want int, p_rate double precision, p_burst double precision,
                                     p_now timestamptz DEFAULT clock_timestamp())
RETURNS TABLE (granted int, retry_after_seconds double precision)
LANGUAGE plpgsql AS $$
DECLARE
    v_tokens double precision;
    v_granted int;
BEGIN
    IF p_want IS NULL OR p_want < 1 OR p_rate IS NULL OR p_rate <= 0 OR p_burst IS NULL OR p_burst < 1 THEN
        RAISE EXCEPTION 'VALIDATION_ERROR: want, rate and burst must be positive';
    END IF;
    PERFORM set_config('synchronous_commit', 'off', true);
    INSERT INTO push_api_rate_buckets AS b (key_id, tokens, updated_at)
    VALUES (p_key_id, p_burst, p_now)
    ON CONFLICT (key_id) DO UPDATE
       SET tokens = least(p_burst, b.tokens + p_rate * greatest(0, extract(epoch FROM p_now - b.updated_at))),
           updated_at = greatest(b.updated_at, p_now)
    RETURNING b.tokens INTO v_tokens;
    v_granted := least(p_want, floor(v_tokens))::int;
    IF v_granted > 0 THEN
        UPDATE push_api_rate_buckets SET tokens = v_tokens - v_granted WHERE key_id = p_key_id;
    END IF;
    granted := v_granted;
    retry_after_seconds := CASE WHEN v_granted > 0 THEN 0 ELSE (1 - v_tokens) / p_rate END;
    RETURN NEXT;
END
$$;
