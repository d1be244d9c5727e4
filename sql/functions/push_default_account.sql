-- push_default_account: the one account that owns the apps made before accounts existed, and apps
-- created without naming an account (sql/0008; the column default of push_apps.account_id).
CREATE FUNCTION push_default_account() RETURNS uuid
LANGUAGE sql STABLE AS $$
    SELECT id FROM push_accounts WHERE is_default
$$;
