import Foundation
import PushCore
import XCTest
@testable import PushStore

/// `RecordJSON.batch` reserves its buffer once, from `estimatedSize`, and never again: a reserve
/// per payload (`Array.reserveCapacity` allocates exactly what it is asked for) copied the whole
/// buffer for every delivery once the first estimate (220 bytes a delivery) ran out, quadratic in
/// the batch. The estimate must hold the largest records the worker makes: encrypted payloads up
/// to the 4096-byte limit, provider ids, error details, deactivations, credential changes.
final class RecordJSONSizeTests: XCTestCase {
    private func job(_ id: Int64) -> ClaimedJob {
        let now = Date(timeIntervalSince1970: 1_764_417_600)
        let n = NotificationRow(id: UUID(), appID: UUID(), mode: .live, status: .sending, title: "t", ttlSeconds: 3600,
                                acceptedAt: now, expiresAt: now.addingTimeInterval(3600))
        return ClaimedJob(id: id, kind: .batch, deviceIDs: nil, leaseToken: UUID(), attempt: 1, maxAttempts: 5, notification: n,
                          app: AppPolicyRow(requireEncryption: true, placeholderTitle: "New message", placeholderBody: "", deleted: false))
    }

    private func record(_ i: Int, payloadBytes: Int) -> DeliveryRecord {
        let at = Date(timeIntervalSince1970: 1_764_417_600.123456)
        switch i % 4 {
        case 0:
            return DeliveryRecord(deviceID: UUID(), status: .sent, encrypted: true, provider: .apns,
                                  providerMessageID: UUID().uuidString, attempts: 1, payload: [UInt8](repeating: 0xAB, count: payloadBytes))
        case 1:
            return DeliveryRecord(deviceID: UUID(), status: .retrying, errorCode: .providerError,
                                  errorDetail: String(repeating: "x", count: 200), encrypted: true, provider: .fcm,
                                  attempts: 2, failures: 2, nextAttemptAt: at, payload: [UInt8](repeating: 1, count: payloadBytes))
        case 2:
            return DeliveryRecord(deviceID: UUID(), status: .failed, errorCode: .unregistered, encrypted: false, provider: .webpush,
                                  providerMessageID: "https://push.example/m/" + String(repeating: "a", count: 100), attempts: 1,
                                  ledger: .refund, deactivateReason: .unregistered, verdictAt: at)
        default:
            return DeliveryRecord(deviceID: UUID(), status: .sent, encrypted: false, provider: .simulator,
                                  providerMessageID: "sim-\(i)", attempts: 1, payload: [UInt8](repeating: 7, count: payloadBytes / 2),
                                  ledger: .charge)
        }
    }

    func testTheEstimateHoldsTheWholeBatch() {
        for (jobs, perJob, payloadBytes) in [(1, 1, 0), (1, 1, 4096), (128, 1, 300), (1, 500, 900), (4, 500, 4096), (3, 7, 1)] {
            let outcomes = (0..<jobs).map { j in
                BatchOutcome(job: job(Int64(j + 1)), records: (0..<perJob).map { record($0 + j, payloadBytes: payloadBytes) },
                             credentials: CredentialChanges(invalid: [.init(kind: .apns, reason: "InvalidProviderToken")],
                                                            accepted: [.fcm]))
            }
            let bytes = RecordJSON.batch(outcomes)
            let estimate = RecordJSON.estimatedSize(outcomes)
            XCTAssertGreaterThanOrEqual(estimate, bytes.count, "\(jobs) jobs × \(perJob) records of \(payloadBytes) bytes")
            XCTAssertGreaterThanOrEqual(bytes.capacity, bytes.count)
            XCTAssertLessThanOrEqual(bytes.capacity, estimate + 4096, "grown by the one reserve only (malloc rounds up to a page at most)")
            XCTAssertLessThanOrEqual(estimate, bytes.count * 2 + 1024, "not wildly over either")
            XCTAssertNotNil(try? JSONSerialization.jsonObject(with: Data(bytes)), "still one JSON value")
        }
    }
}
