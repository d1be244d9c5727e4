import Foundation
import PushCore
import PushStore
@testable import PushWorker
import XCTest

/// The queue store's contract, part 4 (issue 17, sql/0023): a record may carry its notification's
/// final state, decided by PushCore beforehand (`BatchOutcome.final`), when its records are every
/// delivery the notification will have. Both stores (`MemoryQueueConformanceTests`,
/// `PGQueueConformanceTests`) store that state with the record, as told, without asking
/// `decideFinal`; only when the record ends the last batch of a notification not final yet.
extension WorkerTestCase {
    /// A sole batch recorded with its final state: stored as given (a state `decideFinal` would
    /// never say, so the test tells the two apart), no decision asked, endings still answered.
    /// A final given with a batch that is not the notification's last is not stored: the last
    /// batch, recorded without one, is decided from the stored endings as before.
    func conformAFinalGivenWithTheLastBatchIsStoredAsToldAndNoDecisionIsAsked() throws {
        let app = try createApp()
        let device = try register(app, user: "u1")
        let sole = try enqueue(app, users: ["u1"])
        _ = try register(app, user: "u2")
        _ = try register(app, user: "u2")
        let split = try enqueue(app, users: ["u2"])
        let store = try world.session()
        let asked = LockedBox(0)
        let decide: FinalDecision = { endings, sms in
            asked.update { $0 += 1 }
            return NotificationOutcome.final(endings: endings, hasSMSFallback: sms)
        }

        let claimed = try store.jobClaimBatch(owner: "t", limit: 10, leaseSeconds: 60)
        XCTAssertEqual(claimed.count, 2)
        let soleJob = try XCTUnwrap(claimed.first { $0.notification.id == sole })
        let started = try store.startOne(soleJob, batchSize: 1)
        XCTAssertEqual(started.inlineDeviceIDs, [device])
        XCTAssertEqual(started.gone, 0)
        let told = NotificationOutcome(status: .failed, errorCode: .allDevicesRefused, deviceCount: 7)
        let sent = [DeliveryRecord(deviceID: device, status: .sent, attempts: 1)]
        let r = try store.batchRecord([BatchOutcome(job: soleJob, records: sent, final: told)], now: nil, decideFinal: decide)
        XCTAssertEqual(r[soleJob.id], .recorded(BatchRecordResult(remainingBatches: 0, deactivated: 0, endings: [.sent],
                                                                  hasSMSFallback: false)))
        XCTAssertEqual(asked.value, 0, "the given final state is stored, never decided again")
        let stored = try notification(sole)
        XCTAssertEqual(stored.status, "failed")
        XCTAssertEqual(stored.errorCode, "ALL_DEVICES_REFUSED")
        XCTAssertEqual(stored.deviceCount, 7)
        XCTAssertEqual(try deliveries(sole)[device]?.status, "sent")

        // Two batches of one device: the first recorded with a final state (which it is not) leaves
        // the notification sending; the last, without one, is decided from the stored endings.
        let splitJob = try XCTUnwrap(claimed.first { $0.notification.id == split })
        XCTAssertNil(try store.startOne(splitJob, batchSize: 1).inlineDeviceIDs)
        let batches = try store.jobClaimBatch(owner: "t", limit: 10, leaseSeconds: 60)
        XCTAssertEqual(batches.count, 2)
        func records(_ job: ClaimedJob) -> [DeliveryRecord] {
            (job.deviceIDs ?? []).map { DeliveryRecord(deviceID: $0, status: .sent, attempts: 1) }
        }
        let first = try store.batchRecord([BatchOutcome(job: batches[0], records: records(batches[0]), final: told)],
                                          now: nil, decideFinal: decide)
        XCTAssertEqual(first[batches[0].id], .recorded(BatchRecordResult(remainingBatches: 1, deactivated: 0, endings: nil,
                                                                        hasSMSFallback: false)))
        XCTAssertEqual(try notification(split).status, "sending", "not the last batch: the given state is not stored")
        _ = try store.batchRecord([BatchOutcome(job: batches[1], records: records(batches[1]))], now: nil, decideFinal: decide)
        XCTAssertEqual(asked.value, 1)
        XCTAssertEqual(try notification(split).status, "sent")
        XCTAssertEqual(try notification(split).deviceCount, 2)
        XCTAssertEqual(try openJobs(), 0)
    }
}

/// The worker's side (in-memory store): it gives PushCore's final decision with the record of
/// exactly the jobs whose records are every delivery of their notification.
final class SoleBatchWorkerTests: WorkerTestCase {
    /// Single-device and empty-audience notifications it started in the claim get their final
    /// state with the record (the same state the stored endings give); a notification split into
    /// two batches, and one with a DEVICE_GONE row, never do.
    func testTheWorkerGivesTheFinalStateOnlyForASoleBatchItStarted() throws {
        let memory = try XCTUnwrap(world as? MemoryWorld)
        let app = try createApp()
        _ = try register(app, user: "one")
        _ = try register(app, user: "two")
        _ = try register(app, user: "two")
        let moved = try register(app, user: "moved", platform: "ios", token: "shared-phone")
        _ = try register(app, user: "moved", platform: "android")
        let single = try enqueue(app, users: ["one"])
        let nobody = try enqueue(app, users: ["nobody"])
        let split = try enqueue(app, users: ["two"])
        let gone = try enqueue(app, users: ["moved"])
        XCTAssertEqual(try register(app, user: "bob", platform: "ios", token: "shared-phone"), moved, "moved before send time")
        try drain(try makeWorker(batchSize: 1, claimLimit: 8))
        XCTAssertEqual(memory.queue.finalsGiven[single], NotificationOutcome(status: .sent, errorCode: nil, deviceCount: 1))
        XCTAssertEqual(memory.queue.finalsGiven[nobody], NotificationOutcome(status: .failed, errorCode: .noDevices, deviceCount: 0))
        XCTAssertNil(memory.queue.finalsGiven[split], "two batches: decided from the stored endings")
        XCTAssertNil(memory.queue.finalsGiven[gone], "a DEVICE_GONE row is an ending the records do not hold")
        XCTAssertEqual(try notification(single).status, "sent")
        XCTAssertEqual(try notification(nobody).errorCode, "NO_DEVICES")
        XCTAssertEqual(try notification(split).status, "sent")
        XCTAssertEqual(try notification(gone).status, "sent")
        XCTAssertEqual(try notification(gone).deviceCount, 1)
    }
}
