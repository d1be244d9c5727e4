CREATE FUNCTION push_default_account() RETURNS uuid
LANGUAGE sql STABLE AS $$
    SELECT id FROM push_accounts WHERE is_default
$$;
