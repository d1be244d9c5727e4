-- push_unit_fraction_ok: a number from 0 to 1 with at most 4 decimal places (relevance_score, a
-- critical sound's volume). PushCore's `UnitFraction` writes it as 0, 1, 0.75, 0.0001.
CREATE FUNCTION push_unit_fraction_ok(p float8) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT p >= 0 AND p <= 1 AND p::numeric = round(p::numeric, 4)
$$;
