/// SQL of the ledger audit (`LedgerStore`, `pushfleet ledger check`): R-SEND-8 and R-SEND-9 read
/// back from the rows. Scope: notifications accepted in [`$1`, `$2`) (either bound may be NULL).
/// Scans the scope's ledger and delivery rows through their primary keys; meant for operators and
/// the fleet test, not for a hot path.
enum LedgerQueries {
    /// Every (notification, device) of the scope with its ledger counts, its delivery and what it
    /// must net. `expected` (R-SEND-9): 1 for `sent`, `UNREGISTERED`, `INVALID_TOKEN` and an
    /// `APP_MISMATCH` blamed on the device (test mode, where the simulator always blames the
    /// device, or the device was deactivated for it); 0 for every other final ending, and for a
    /// device of a final notification that has no final delivery (cancelled, or a leak); NULL
    /// (not judged) while the delivery is not final, or for a live `APP_MISMATCH` whose device
    /// re-registered after the verdict (R-DEV-8 kept it active, so the blame cannot be read back).
    static let judgedPairs = """
    WITH scope AS (
        SELECT n.id, n.mode, n.status, n.device_count, n.finished_at IS NOT NULL AS final
          FROM push_notifications n
         WHERE ($1::timestamptz IS NULL OR n.accepted_at >= $1::timestamptz)
           AND ($2::timestamptz IS NULL OR n.accepted_at < $2::timestamptz)
    ), keys AS (
        SELECT l.notification_id, l.device_id FROM push_ledger l JOIN scope s ON s.id = l.notification_id
         WHERE l.kind <> 'sms'
        UNION
        SELECT d.notification_id, d.device_id FROM push_deliveries d JOIN scope s ON s.id = d.notification_id
    ), pairs AS (
        SELECT k.notification_id, k.device_id, s.mode, s.final,
               (SELECT count(*) FROM push_ledger l WHERE l.notification_id = k.notification_id
                   AND l.device_id = k.device_id AND l.kind = 'charge') AS charges,
               (SELECT count(*) FROM push_ledger l WHERE l.notification_id = k.notification_id
                   AND l.device_id = k.device_id AND l.kind = 'refund') AS refunds,
               del.status AS delivery_status, del.error_code, del.finished_at AS delivery_finished_at,
               dev.deactivation_reason, dev.last_registered_at
          FROM keys k
          JOIN scope s ON s.id = k.notification_id
          LEFT JOIN push_deliveries del ON del.notification_id = k.notification_id AND del.device_id = k.device_id
          LEFT JOIN push_devices dev ON dev.id = k.device_id
    )
    SELECT p.*, p.charges - p.refunds AS net,
           CASE WHEN p.delivery_status = 'sent' THEN 1
                WHEN p.delivery_status = 'failed' AND p.error_code IN ('UNREGISTERED', 'INVALID_TOKEN') THEN 1
                WHEN p.delivery_status = 'failed' AND p.error_code = 'APP_MISMATCH' THEN
                     CASE WHEN p.mode = 'test' OR p.deactivation_reason = 'APP_MISMATCH' THEN 1
                          WHEN p.last_registered_at > p.delivery_finished_at THEN NULL
                          ELSE 0 END
                WHEN p.delivery_status = 'failed' THEN 0
                WHEN p.final THEN 0
           END AS expected
      FROM pairs p
    """

    /// The violations of the scope, ordered by kind then ids, at most `$3` rows. Kinds:
    /// `DUPLICATE_CHARGE`, `DUPLICATE_REFUND`, `REFUND_WITHOUT_CHARGE`, `NET_MISMATCH` (a final
    /// delivery, or a device of a final notification, netting other than R-SEND-9 says),
    /// `DEVICE_COUNT_MISMATCH` (a final notification whose `device_count` is not the number of its
    /// devices netting one charge), `SMS_LEDGER_MISMATCH` (an SMS fallback `queued` or `unknown`
    /// without its `sms` row, or such a row without one; R-SMS-1).
    static let violations = """
    WITH judged AS MATERIALIZED (\(judgedPairs)), counts AS (
        SELECT s.id, s.device_count,
               (SELECT count(*) FROM judged j WHERE j.notification_id = s.id AND j.net = 1) AS netting_one
          FROM push_notifications s
         WHERE s.finished_at IS NOT NULL
           AND ($1::timestamptz IS NULL OR s.accepted_at >= $1::timestamptz)
           AND ($2::timestamptz IS NULL OR s.accepted_at < $2::timestamptz)
    ), found AS (
        SELECT 'DUPLICATE_CHARGE' AS violation, notification_id, device_id,
               charges || ' charge rows' AS detail FROM judged WHERE charges > 1
        UNION ALL
        SELECT 'DUPLICATE_REFUND', notification_id, device_id, refunds || ' refund rows' FROM judged WHERE refunds > 1
        UNION ALL
        SELECT 'REFUND_WITHOUT_CHARGE', notification_id, device_id, refunds || ' refund rows, no charge'
          FROM judged WHERE refunds > 0 AND charges = 0
        UNION ALL
        SELECT 'NET_MISMATCH', notification_id, device_id,
               'delivery ' || coalesce(delivery_status, 'missing') || coalesce(' ' || error_code, '')
               || ' nets ' || net || ', expected ' || expected
          FROM judged WHERE expected IS NOT NULL AND net <> expected AND charges <= 1 AND refunds <= charges
        UNION ALL
        SELECT 'DEVICE_COUNT_MISMATCH', id, NULL,
               'device_count ' || device_count || ', devices netting one charge ' || netting_one
          FROM counts WHERE device_count <> netting_one
        UNION ALL
        -- R-SMS-1: one 'sms' row exactly for an SMS the provider took or may have taken.
        SELECT 'SMS_LEDGER_MISMATCH', s.id, NULL,
               'sms ' || coalesce(m.status, 'missing') || ', ' || (SELECT count(*) FROM push_ledger l
                   WHERE l.notification_id = s.id AND l.kind = 'sms') || ' sms ledger row(s)'
          FROM push_notifications s
          LEFT JOIN push_sms_outbox m ON m.notification_id = s.id
         WHERE ($1::timestamptz IS NULL OR s.accepted_at >= $1::timestamptz)
           AND ($2::timestamptz IS NULL OR s.accepted_at < $2::timestamptz)
           AND (coalesce(m.status IN ('queued', 'unknown'), false)
                <> EXISTS (SELECT 1 FROM push_ledger l WHERE l.notification_id = s.id AND l.kind = 'sms'))
    )
    SELECT violation, notification_id, device_id, detail FROM found
     ORDER BY violation, notification_id, device_id NULLS FIRST
     LIMIT $3::int
    """

    /// How much the check covered: notifications in scope, final ones, ledger rows, delivery rows.
    static let scope = """
    SELECT count(*) AS notifications, count(*) FILTER (WHERE n.finished_at IS NOT NULL) AS final_notifications,
           coalesce(sum((SELECT count(*) FROM push_ledger l WHERE l.notification_id = n.id)), 0)::bigint AS ledger_rows,
           coalesce(sum((SELECT count(*) FROM push_deliveries d WHERE d.notification_id = n.id)), 0)::bigint AS deliveries
      FROM push_notifications n
     WHERE ($1::timestamptz IS NULL OR n.accepted_at >= $1::timestamptz)
       AND ($2::timestamptz IS NULL OR n.accepted_at < $2::timestamptz)
    """
}
