import Foundation
import PushCore
import PushStore
import XCTest

/// R-SEND-10's expiry is computed once, where the notification is stored: push_enqueue's
/// `push_expires_at` from the database's acceptance instant; the worker reads the stored instant.
final class ExpiryStorageTests: PGWorkerTestCase {
    private func expiresAt(sendAt: Date?, ttl: Int?, now: Date) throws -> Date {
        let app = try createApp()
        var q = EnqueueRequest(appID: app, mode: "test", userIDs: ["u"])
        q.title = "t"
        q.sendAt = sendAt
        q.ttlSeconds = ttl
        let id = try NotificationStore(connection: conn).enqueue(q, now: now).id
        return try conn.exec("SELECT expires_at FROM push_notifications WHERE id = $1", [.uuid(id)]).date(0, "expires_at")
    }

    func testExpiresAtIsTheLaterOfAcceptedAndSendAtPlusTTL() throws {
        let now = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 / 1000).rounded() * 1000)
        XCTAssertEqual(try expiresAt(sendAt: nil, ttl: 60, now: now), now.addingTimeInterval(60))
        XCTAssertEqual(try expiresAt(sendAt: now.addingTimeInterval(100), ttl: 60, now: now), now.addingTimeInterval(160))
        XCTAssertEqual(try expiresAt(sendAt: now.addingTimeInterval(-100), ttl: 60, now: now), now.addingTimeInterval(60),
                       "a send_at in the past counts from acceptance")
        XCTAssertEqual(try expiresAt(sendAt: nil, ttl: nil, now: now), now.addingTimeInterval(2_419_200),
                       "the ttl defaults to four weeks")
    }
}
