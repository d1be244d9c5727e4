-- API access for real deployments (issue 15): keys scoped to apps, the audit log, the usage
-- report's index, per-user erasure. Expand-only: a worker, CLI or API of the previous release keeps
-- working (a key made without apps sees every app of its account, as before).

-- Keys scoped to apps (issue 15 part 3, R-API-1): NULL is every app of the key's account; a list
-- limits the key to those apps, and every other app answers 404 like one that does not exist.
-- `pushfleet api-keys create --apps` checks each is the account's when the key is made.
ALTER TABLE push_api_keys ADD COLUMN app_ids uuid[]
    CHECK (app_ids IS NULL OR (cardinality(app_ids) BETWEEN 1 AND 100 AND array_position(app_ids, NULL) IS NULL));
