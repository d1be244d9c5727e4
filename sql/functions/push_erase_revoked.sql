-- push_erase_revoked: the trigger function erasing a revoked notification's content when it
-- becomes final (sql/0022): a whole revocation while pending or sending leaves the content for the
-- batches still to push it, and this erases it once none is left, whichever statement makes the
-- notification final (the finalization, the record of a sole batch, a cancel, an expiry). The
-- trigger's WHEN passes only rows just made final, revoked and not erased, so the hot path's
-- finalizations pay nothing else. push_erase_content is the one definition of what is erased.
CREATE FUNCTION push_erase_revoked() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM push_erase_content(ARRAY[NEW.id]);
    RETURN NULL;
END
$$;
