import Foundation
import PushCore
import PushProviders
import PushTestSupport
import PushBench
import XCTest

/// `ProviderBenchmark` against the fake APNs. A small run always executes (it checks the numbers are
/// sane); `PUSH_BENCH=1` raises the request count and prints the figures for comparison.
final class ProviderBenchmarkTests: XCTestCase {
    func testMultiplexedAndSequentialRunsReportCPUPerRequest() throws {
        let count = ProcessInfo.processInfo.environment["PUSH_BENCH"] == "1" ? 2000 : 60
        let fake = try FakeProviderServer.startAPNs(teamID: "TEAM123456", keyID: "KEY1234567", topic: "com.example.honkio",
                                                    extra: ["--max-streams", "1000"])
        defer { fake.stop() }
        var config = APNsClient.Configuration(teamId: "TEAM123456", keyId: "KEY1234567", topic: "com.example.honkio")
        config.productionBaseURL = fake.baseURL
        config.http = HTTP2Client.Configuration(caFile: try FakeMaterial.file("ca.pem"))
        let apns = try APNsClient.make(configuration: config, privateKeyPEM: try FakeMaterial.text("apns_key.p8"))
        let payload = Array(#"{"aps":{"alert":{"title":"t","body":"b"},"mutable-content":1}}"#.utf8)
        let results = ProviderBenchmark.compare(provider: apns, count: count, batchSize: 100,
                                                connections: { apns.http.connectionsOpened }) { i in
            ProviderRequest(deliveryId: Int64(i), deviceToken: String(format: "%064x", i), payload: payload,
                            apnsId: UUID().uuidString.lowercased())
        }
        print("ProviderBenchmark", results.multiplexed)
        print("ProviderBenchmark", results.sequential)
        for result in [results.multiplexed, results.sequential] {
            XCTAssertEqual(result.requests, count)
            XCTAssertEqual(result.succeeded, count)
            XCTAssertGreaterThan(result.cpuMicrosPerRequest, 0)
            XCTAssertLessThanOrEqual(result.connectionsOpened, 1, "persistent connection across batches")
        }
        XCTAssertEqual(fake.log("push").count, 2 * count)
    }

    func testSweepInterleavesBatchSizesAndTheMedianIsTheMiddleRun() {
        final class Recorder: PushProvider, @unchecked Sendable {
            var batches: [Int] = []
            var ids: [Int64] = []
            func send(_ batch: [ProviderRequest]) -> [ProviderAnswer] {
                batches.append(batch.count)
                ids += batch.map(\.deliveryId)
                return batch.map { _ in ProviderAnswer(transport: .response, httpStatus: 200) }
            }
        }
        let recorder = Recorder()
        let results = ProviderBenchmark.sweep(provider: recorder, batchSizes: [1, 3], rounds: 2,
                                              requestsPerRun: { $0 == 1 ? 2 : 6 }) { i in
            ProviderRequest(deliveryId: Int64(i), deviceToken: "t\(i)", payload: [], apnsId: "")
        }
        XCTAssertEqual(recorder.batches, [1, 1, 3, 3, 1, 1, 3, 3], "round 1 of every size, then round 2")
        XCTAssertEqual(recorder.ids, (0..<16).map(Int64.init), "every request distinct")
        XCTAssertEqual(results[1]?.map(\.requests), [2, 2])
        XCTAssertEqual(results[3]?.map(\.succeeded), [6, 6])
        XCTAssertEqual(ProviderBenchmark.median([5, 1, 3]), 3)
        XCTAssertEqual(ProviderBenchmark.median([4, 1, 3, 2]), 2.5)
        XCTAssertEqual(ProviderBenchmark.median([]), 0)
    }
}
