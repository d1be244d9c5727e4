-- Issue 11: the fleet-shared APNs provider JWT is a bearer credential (whoever reads it can push to
-- every device of the app until it expires), so it is stored sealed like the credential secrets:
-- AES-256-GCM under PUSHFLEET_CREDENTIALS_KEY, aad 'push_provider_tokens/<cache_key>'
-- (SecretBox: nonce || ciphertext || tag). Workers of schema >= 7 write sealed_token and leave
-- token NULL; their cache keys name the signing key (`apns:<team>:<key id>:<key fingerprint>`).
--
-- Expand only: a worker of the previous release keeps reading and writing its own rows (cache keys
-- `apns:<team>:<key id>`, token in clear), which a worker of this release never reads. Those rows
-- hold JWTs that APNs refuses an hour after their iat; the contract step (dropping `token` and its
-- rows) follows once no worker below schema 7 runs.

ALTER TABLE push_provider_tokens
    ADD COLUMN sealed_token bytea,
    ALTER COLUMN token DROP NOT NULL,
    ADD CONSTRAINT push_provider_tokens_one_form CHECK ((token IS NULL) <> (sealed_token IS NULL));
