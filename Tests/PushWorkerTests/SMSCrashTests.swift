import Foundation
import XCTest
import PushCore
import PushCrypto
import PushTestSupport
@testable import PushStore
@testable import PushWorker

/// R-SMS-1, once across crashes: `pushfleet worker` processes killed with SIGKILL while they hold
/// an SMS. Killed between the claim and the send, the SMS is sent once by the next worker; killed
/// after the request was written, it is `unknown` and never sent again.
final class SMSCrashTests: SMSTestCase {
    private var processes: [WorkerProcess] = []

    override func tearDownWithError() throws {
        for p in processes { p.stop() }
        try super.tearDownWithError()
    }

    private func startWorker(_ name: String) throws -> WorkerProcess {
        let env = [
            "DATABASE_URL": database.conninfo, CredentialKeys.currentVariable: Base64URL.encode(keys.current),
            "PUSHFLEET_PROVIDER_CA_FILE": try FakeMaterial.file("ca.pem"), "PUSHFLEET_LOG_LEVEL": "info",
            "PUSHFLEET_SMS_LEASE_SECONDS": "2", "PUSHFLEET_SMS_RESCUE_INTERVAL": "0.2", "PUSHFLEET_SMS_POLL_INTERVAL": "0.1",
            "PUSHFLEET_SMS_REQUEST_TIMEOUT_MS": "60000",
        ]
        let p = try WorkerProcess.start(LiveWebPushCLI.executable, ["worker", "--poll-interval", "0.1", "--metrics-addr", "off"],
                                        environment: env, name: name)
        processes.append(p)
        return p
    }

    private func waitUntil(_ what: String, timeout: Double = 30, _ condition: () throws -> Bool) throws {
        let end = Date().addingTimeInterval(timeout)
        while Date() < end {
            if try condition() { return }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw DrainTimeout(seconds: timeout, what: what + ":\n"
                           + processes.map { "\($0.name): \($0.logText().suffix(3000))" }.joined(separator: "\n"))
    }

    /// The worker owning notification `n`'s SMS lease, or nil.
    private func leaseOwner(_ n: UUID) throws -> String? {
        try conn.exec("""
            SELECT o.lease_owner FROM push_outbox o JOIN push_sms_outbox s ON s.id = o.ref_id AND o.kind = 'sms'
             WHERE s.notification_id = $1::uuid
            """, [.uuid(n)]).decode(0, "lease_owner")
    }

    func testKillNineBetweenClaimAndSendThenRestartSendsOnce() throws {
        let fake = try startTwilio()
        try setTwilio(fake.baseURL)
        let n = try smsNotification(mode: .live)
        // Hold the SMS row: the first worker claims it, then waits at its sending mark.
        let blocker = try database.connect()
        _ = try blocker.exec("BEGIN")
        _ = try blocker.exec("SELECT 1 FROM push_sms_outbox WHERE notification_id = $1::uuid FOR UPDATE", [.uuid(n)])
        let first = try startWorker("sms-a")
        try waitUntil("the claim") { try leaseOwner(n) != nil }
        try waitUntil("the mark to wait for the row") {
            try conn.exec("SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()")
                .int(0, "n") > 0
        }
        first.kill9()
        _ = try blocker.exec("ROLLBACK")
        XCTAssertTrue(fake.log("request").isEmpty, "nothing was written before the kill")

        _ = try startWorker("sms-b")
        try waitUntil("the SMS to be queued by the second worker") { try self.sms(n).status == "queued" }
        XCTAssertEqual(fake.log("request").count, 1, "sent once")
        XCTAssertEqual(fake.log("message").count, 1)
        XCTAssertEqual(try sms(n).attempts, 1, "the killed worker's mark was never committed")
        XCTAssertEqual(try smsLedger(n).count, 1)
    }

    func testKillNineAfterTheRequestWasWrittenIsUnknownAndNotResent() throws {
        let fake = try startTwilio()
        try setTwilio(fake.baseURL)
        let n = try smsNotification(mode: .live, phone: "+19990000408")   // the fake never answers
        let first = try startWorker("sms-c")
        try waitUntil("the request to reach the fake") { !fake.log("request").isEmpty }
        XCTAssertEqual(try sms(n).status, "sending")
        first.kill9()

        _ = try startWorker("sms-d")
        try waitUntil("the expired lease to be rescued") { try self.sms(n).status == "unknown" }
        Thread.sleep(forTimeInterval: 1)   // several more claim and rescue rounds
        XCTAssertEqual(fake.log("request").count, 1, "never written twice")
        let s = try sms(n)
        XCTAssertEqual(s.attempts, 1)
        XCTAssertTrue(s.errorDetail?.hasPrefix("LEASE_EXPIRED") ?? false, s.errorDetail ?? "")
        XCTAssertEqual(try smsLedger(n).map(\.reason), ["unknown"])
        XCTAssertEqual(try outbox(n).state, "done")
    }
}
