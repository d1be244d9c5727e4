-- The HTTP API's accounts and keys (R-API-1..4), per-key rate limits, and the indexes of the API's
-- list endpoints. Expand-only: a worker or CLI of the previous release keeps working (apps it
-- creates land in the default account through the column default below).

-- R-API-1: an account owns apps and API keys.
CREATE TABLE push_accounts (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name        text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
    -- The one account that owns the apps made before accounts existed (below), and apps created
    -- without naming an account (`pushfleet apps create` without --account, an older release).
    is_default  boolean NOT NULL DEFAULT false,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX push_accounts_default_key ON push_accounts (is_default) WHERE is_default;

-- Apps made before this migration get the default account: it is created here, once, and named so.
INSERT INTO push_accounts (name, is_default) VALUES ('default (owns the apps made before accounts, sql/0008)', true);

CREATE FUNCTION push_default_account() RETURNS uuid
LANGUAGE sql STABLE AS $$
    SELECT id FROM push_accounts WHERE is_default
$$;

ALTER TABLE push_apps ADD COLUMN account_id uuid REFERENCES push_accounts (id);
UPDATE push_apps SET account_id = push_default_account();
ALTER TABLE push_apps ALTER COLUMN account_id SET DEFAULT push_default_account();
ALTER TABLE push_apps ALTER COLUMN account_id SET NOT NULL;
-- GET /v1/push/apps: an account's apps, newest first (keyset pagination on (created_at, id)).
CREATE INDEX push_apps_account_idx ON push_apps (account_id, created_at DESC, id DESC);

-- push_app_create, as in 0006, with the owning account: p_account_id (NULL: the default account).
-- Restated whole and the 4-argument form dropped, so a caller of the previous release (four
-- arguments) reaches this one through its default. NOT_FOUND for an unknown account.
DROP FUNCTION push_app_create(text, boolean, text, text);
CREATE FUNCTION push_app_create(p_name text, p_require_encryption boolean DEFAULT NULL,
                                p_placeholder_title text DEFAULT NULL, p_placeholder_body text DEFAULT NULL,
                                p_account_id uuid DEFAULT NULL)
RETURNS TABLE (id uuid, name text, require_encryption boolean, placeholder_title text, placeholder_body text,
               deleted boolean, created_at timestamptz, updated_at timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_account uuid := coalesce(p_account_id, push_default_account());
BEGIN
    IF p_name IS NULL THEN
        PERFORM push_refuse('name', 'is required');
    END IF;
    PERFORM push_check_app_fields(p_name, p_placeholder_title, p_placeholder_body);
    PERFORM 1 FROM push_accounts c WHERE c.id = v_account;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'NOT_FOUND: account % does not exist', v_account USING COLUMN = 'account_id';
    END IF;
    RETURN QUERY
        INSERT INTO push_apps AS a (name, require_encryption, placeholder_title, placeholder_body, account_id)
        VALUES (p_name, coalesce(p_require_encryption, false), coalesce(p_placeholder_title, 'New notification'),
                coalesce(p_placeholder_body, ''), v_account)
        RETURNING a.id, a.name, a.require_encryption, a.placeholder_title, a.placeholder_body,
                  a.deleted_at IS NOT NULL, a.created_at, a.updated_at;
END
$$;

-- R-API-1, R-API-3: a key belongs to one account and one mode; only its SHA-256 is stored (the key
-- is 190 random bits, so a fast hash is enough and keeps the per-request check one index probe),
-- with its first characters for display. `permissions` is the canonical text of R-API-2
-- (`push_devices:wd,push:rw,push_apps:rw`), parsed by the API. Revocation sets `revoked_at`: every
-- request reads the key row, so it takes effect on the next request on every replica.
CREATE TABLE push_api_keys (
    id                     uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    account_id             uuid NOT NULL REFERENCES push_accounts (id) ON DELETE CASCADE,
    mode                   text NOT NULL CHECK (mode IN ('test', 'live')),
    name                   text CHECK (name IS NULL OR char_length(name) BETWEEN 1 AND 200),
    key_hash               bytea NOT NULL CHECK (octet_length(key_hash) = 32),
    key_prefix             text NOT NULL CHECK (char_length(key_prefix) BETWEEN 8 AND 20),
    permissions            text NOT NULL CHECK (permissions ~ '^[a-z_]+:[rwd]+(,[a-z_]+:[rwd]+)*$'),
    -- Requests per second across every replica (R-API part 6), with a burst of one second's worth.
    rate_limit_per_second  int NOT NULL DEFAULT 100 CHECK (rate_limit_per_second BETWEEN 1 AND 1000000),
    created_at             timestamptz NOT NULL DEFAULT now(),
    revoked_at             timestamptz
);
-- The per-request lookup.
CREATE UNIQUE INDEX push_api_keys_hash_key ON push_api_keys (key_hash);
-- `pushfleet api-keys list --account A`.
CREATE INDEX push_api_keys_account_idx ON push_api_keys (account_id, created_at);

-- Per-key token buckets shared by every API replica. UNLOGGED: a bucket is worth nothing after a
-- crash (it refills within a second), and its writes then cost no WAL flush.
CREATE UNLOGGED TABLE push_api_rate_buckets (
    key_id      uuid PRIMARY KEY,
    tokens      double precision NOT NULL,
    updated_at  timestamptz NOT NULL
);

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

-- The API's list endpoints, newest first with keyset pagination on (created_at, id):
-- GET /v1/push/devices?app_id=... (optionally &user_id=...).
CREATE INDEX push_devices_list_idx ON push_devices (app_id, mode, created_at DESC, id DESC);
CREATE INDEX push_devices_user_list_idx ON push_devices (app_id, mode, user_id, created_at DESC, id DESC);
-- GET /v1/push/notifications?app_id=... (newest accepted first).
CREATE INDEX push_notifications_list_idx ON push_notifications (app_id, mode, accepted_at DESC, id DESC);
