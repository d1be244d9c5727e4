import XCTest
@testable import PushStore

/// LISTEN/NOTIFY wake-ups: a waiting worker learns of new work well under a second.
final class PGNotifyTests: PGTestCase {
    private func now() -> Double { ProcessInfo.processInfo.systemUptime }

    func testNotifyFromAnotherSessionWakesWaiterWithinOneSecond() throws {
        try conn.listen("jobs_ready")
        let waiter = conn!
        let outcome = PGLockedBox<(received: [PGNotification], error: Error?, wokeAt: Double)>(([], nil, 0))
        let done = expectation(description: "waiter returned")
        let thread = Thread {
            do {
                let received = try waiter.waitForNotifications(timeout: 10)
                outcome.update { $0.received = received }
            } catch {
                outcome.update { $0.error = error }
            }
            outcome.update { $0.wokeAt = ProcessInfo.processInfo.systemUptime }
            done.fulfill()
        }
        thread.start()
        Thread.sleep(forTimeInterval: 0.3)
        let sender = try database.connect()
        let sentAt = now()
        try sender.notify("jobs_ready", payload: "batch-7")
        wait(for: [done], timeout: 5)
        let (received, waitError, wokeAt) = outcome.value
        XCTAssertNil(waitError)
        XCTAssertEqual(received, [PGNotification(channel: "jobs_ready", payload: "batch-7",
                                                 senderProcessID: sender.serverProcessID)])
        XCTAssertLessThan(wokeAt - sentAt, 1.0, "woken within a second of the NOTIFY")
    }

    func testWaitReturnsNothingAfterItsTimeout() throws {
        try conn.listen("quiet")
        let start = now()
        XCTAssertEqual(try conn.waitForNotifications(timeout: 0.2), [])
        let elapsed = now() - start
        XCTAssertGreaterThanOrEqual(elapsed, 0.19)
        XCTAssertLessThan(elapsed, 1.0)
        XCTAssertEqual(try conn.waitForNotifications(timeout: 0), [])
    }

    func testNotificationsReceivedDuringOtherStatementsAreReturnedAtOnce() throws {
        try conn.listen("a")
        let sender = try database.connect()
        try sender.notify("a", payload: "1")
        try sender.notify("a", payload: "2")
        Thread.sleep(forTimeInterval: 0.1)
        _ = try conn.exec("SELECT 1")
        let start = now()
        XCTAssertEqual(try conn.waitForNotifications(timeout: 5).map(\.payload), ["1", "2"])
        XCTAssertLessThan(now() - start, 0.5)
    }

    func testChannelNamesAreExactAndUnlistenStopsDelivery() throws {
        let odd = "Jobs \"quoted\"; DROP"
        try conn.listen(odd)
        let sender = try database.connect()
        try sender.notify("jobs \"quoted\"; drop", payload: "wrong case")
        try sender.notify(odd, payload: "exact")
        XCTAssertEqual(try conn.waitForNotifications(timeout: 2).map(\.payload), ["exact"])
        try conn.unlisten(odd)
        try sender.notify(odd, payload: "after unlisten")
        XCTAssertEqual(try conn.waitForNotifications(timeout: 0.2), [])
    }

    func testNotifyInsideTransactionIsDeliveredOnlyAtCommit() throws {
        try conn.listen("tx")
        let sender = try database.connect()
        try sender.transaction { c in
            try c.notify("tx", payload: "committed")
            XCTAssertEqual(try self.conn.waitForNotifications(timeout: 0.2), [])
        }
        XCTAssertEqual(try conn.waitForNotifications(timeout: 2).map(\.payload), ["committed"])
    }

    func testWaitOnTerminatedSessionThrowsConnectionLost() throws {
        try conn.listen("x")
        let admin = try database.connect()
        try admin.exec("SELECT pg_terminate_backend($1)", [.int(Int(conn.serverProcessID))])
        let error = expectPGError { _ = try self.conn.waitForNotifications(timeout: 3) }
        XCTAssertEqual(error?.isConnectionLost, true)
    }
}
