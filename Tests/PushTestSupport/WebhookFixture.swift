import Foundation
import PushCore
import PushStore

/// Webhook endpoints for tests that look at `push_events` rows: an event no endpoint wants is
/// deleted in the transaction that records it (sql/0009), so a test asserting that an event was
/// recorded (R-PRV-4) gives its app endpoints that want every type. Rows queued for them are never
/// dispatched in those tests (no dispatcher runs).
public enum WebhookFixture {
    /// A test and a live endpoint of `appID` subscribed to every event type, written directly (the
    /// sealed secret is a placeholder that no dispatcher could open).
    public static func subscribeToEverything(_ conn: PGConnection, appID: UUID) throws {
        for mode in Mode.allCases {
            try conn.exec("""
                INSERT INTO push_webhook_endpoints (id, app_id, mode, url, event_types, secret_sealed)
                VALUES (gen_random_uuid(), $1::uuid, $2::text, 'https://hooks.example.com/everything', $3::text[], '\\x00')
                """, [.uuid(appID), .text(mode.rawValue), .textArray(WebhookEventType.allCases.map(\.rawValue))])
        }
    }
}
