-- push_policy_delivers (sql/0024, issue 16): the policy's verdict for one device, the acceptance
-- charges' predicate (R-SEND-9, R-IDS-1) in one place: delivered (so charged) when the device has a
-- key, when its platform's transport encrypts every push itself (Web Push, R-SEND-11:
-- `push_platforms.encrypts_itself`, as the provider table's payload writer says), when encryption
-- is not required, or when the app is ids_only. push_enqueue (acceptance charges) and
-- push_split_audience (a whole-app audience's charges at send time) both call it; PushCore's
-- DeliveryPlanner.policyDelivers applies the same policy at send time (README "Design").
-- A plain SQL expression, IMMUTABLE and without a subquery, so the planner inlines it into the
-- callers' statements (no call per device; push_devices_broadcast_idx's index-only scan is kept).
-- p_encrypted is the app's require_encryption at acceptance, the notification's `encrypted` at
-- the send time; NULL counts as false.
CREATE FUNCTION push_policy_delivers(p_keyed boolean, p_encrypts_itself boolean, p_encrypted boolean,
                                     p_content_mode text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT p_keyed OR p_encrypts_itself OR NOT coalesce(p_encrypted, false) OR p_content_mode = 'ids_only'
$$;
