import Dispatch
import Foundation
import PushBench
import PushCore
import PushCrypto
import PushProviders

/// `pushfleet bench <what>`: in-process measurements for `scripts/bench` (not a user command, not
/// in `--help`). Every figure is CPU time (thread or process) unless it says wall; answers are one
/// JSON object on stdout with `--json`.
///
/// - `bench seal --seconds S [--threads N|all]`: `EnvelopeSealer` seals of an 87-byte plaintext
///   (the vector's size) for S wall seconds on N threads → `seals_per_second`, `cpu_us_per_seal`.
/// - `bench floor [--iterations N]`: `CryptoBenchmark.floorMicroseconds` (one fixed-base plus one
///   variable-base `EC_POINT_mul`) and `sealMicroseconds`, both in thread-CPU µs.
/// - `bench plan [--iterations N]`: PushCore planning plus the final request body per delivery,
///   plaintext and encrypted (seal included), thread-CPU µs; `single_notification_us`: a planner
///   built per notification (a single-user notification's shape) and its one plaintext delivery.
/// - `bench apns ...` and `bench fcm ...`: the provider clients' CPU per request against a fake
///   (`Commands+BenchProviders.swift`).
enum BenchCommands {
    static func run(_ sub: String, _ args: Arguments, _ out: Output) throws {
        switch sub {
        case "seal": try seal(args, out)
        case "floor": try floor(args, out)
        case "plan": try plan(args, out)
        case "apns": try apns(args, out)
        case "fcm": try fcm(args, out)
        default: throw CLIError.usage("bench \(sub.prefix(20)): unknown; use seal, floor, plan, apns or fcm")
        }
    }

    static let usage = """
        Usage: pushfleet bench seal --seconds S [--threads N|all] [--json]
               pushfleet bench floor [--iterations N] [--json]
               pushfleet bench plan [--iterations N] [--json]
               pushfleet bench apns --url URL --ca-file CA --key-file P8 --team-id T --key-id K --topic X
                                    [--batch-sizes 1,100,500] [--count N] [--rounds R] [--json]
               pushfleet bench fcm --url URL --ca-file CA --sa-key-file PEM --client-email E --project-id P
                                   [--batch-sizes 1,100,500] [--count N] [--rounds R] [--json]
        Measurements for scripts/bench (CPU microseconds; see docs/bench.md).
        """

    // MARK: - seal

    /// Seals on N threads for S seconds; every thread has its own recipient and plaintext.
    static func seal(_ args: Arguments, _ out: Output) throws {
        let seconds = max(0.2, args.value("seconds").flatMap(Double.init) ?? 3)
        let threadText = args.value("threads") ?? "1"
        let threads = threadText == "all" ? ProcessInfo.processInfo.activeProcessorCount : max(1, Int(threadText) ?? 1)
        let sealer = try EnvelopeSealer()
        let recipients = try (0..<threads).map { _ in try P256PrivateKey.generate().publicKey }
        let plaintext = [UInt8](repeating: 0x61, count: 87)
        _ = try sealer.seal(plaintext, to: recipients[0])
        let counts = UnsafeMutableBufferPointer<Int>.allocate(capacity: threads)
        counts.initialize(repeating: 0)
        defer { counts.deallocate() }
        let failed = ManagedFlag()
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(seconds * 1e9)
        let cpuBefore = ProviderBenchmark.processCPUMicros()
        let wallBefore = DispatchTime.now().uptimeNanoseconds
        DispatchQueue.concurrentPerform(iterations: threads) { t in
            var n = 0
            while DispatchTime.now().uptimeNanoseconds < deadline {
                for _ in 0..<16 {
                    if (try? sealer.seal(plaintext, to: recipients[t])) == nil { failed.set() }
                }
                n += 16
            }
            counts[t] = n
        }
        let wall = Double(DispatchTime.now().uptimeNanoseconds - wallBefore) / 1e9
        let cpu = ProviderBenchmark.processCPUMicros() - cpuBefore
        guard !failed.isSet else { throw CLIError(code: "BENCH_SEAL_FAILED", message: "a seal failed during the benchmark", exitCode: 1) }
        let total = counts.reduce(0, +)
        let fields = ["threads": String(threads), "seals": String(total),
                      "seals_per_second": fmt(Double(total) / wall), "wall_seconds": fmt(wall),
                      "cpu_us_per_seal": fmt(cpu / Double(max(total, 1)))]
        out.emit(KV(fields: fields)) { text(fields) }
    }

    // MARK: - floor

    static func floor(_ args: Arguments, _ out: Output) throws {
        let iterations = max(1, try args.int("iterations") ?? 3000)
        // Best of three runs of each: the machine is shared, the minimum is the cost.
        var floorUs = Double.infinity, sealUs = Double.infinity
        for _ in 0..<3 {
            floorUs = min(floorUs, try CryptoBenchmark.floorMicroseconds(iterations: iterations))
            sealUs = min(sealUs, try CryptoBenchmark.sealMicroseconds(iterations: iterations))
        }
        let fields = ["floor_us": fmt(floorUs), "seal_us": fmt(sealUs), "seal_over_floor": fmt(sealUs / floorUs),
                      "iterations": String(iterations)]
        out.emit(KV(fields: fields)) { text(fields) }
    }

    // MARK: - plan

    /// Planner + request body per delivery (iOS, the bench workload's content), thread CPU.
    static func plan(_ args: Arguments, _ out: Output) throws {
        let iterations = max(1, try args.int("iterations") ?? 20_000)
        let content = NotificationContent(title: "Your order shipped", body: "Order 1234 is on its way",
                                          data: try JSONParser.parseDataObject(#"{"order":"1234"}"#), badge: 1)
        let planner = DeliveryPlanner(content: content, placeholders: AppPlaceholders(title: "New message", body: ""),
                                      requireEncryption: false, mode: .test, platforms: ProviderTable.standard.planning)
        let key = try P256PrivateKey.generate().publicKey
        let plain = DeviceSnapshot(platform: "ios", token: String(repeating: "ab", count: 32), apnsEnvironment: .production)
        let sealedDevice = DeviceSnapshot(platform: "ios", token: plain.token, apnsEnvironment: .production,
                                          publicKey: key.raw, kid: key.kid)
        let sealer = try EnvelopeSealer()
        var sink = 0
        func body(_ device: DeviceSnapshot) throws -> Int {
            guard case .send(let p) = planner.plan(device) else { throw PushError(.providerError, "bench plan refused") }
            switch p.body {
            case .plaintext(let payload):
                return payload.requestBody(ttlSeconds: 3600).count
            case .sealed(let plaintext, let template):
                let stored = try P256PublicKey(validatedStoredBytes: device.publicKey ?? [])
                let (enc, ct) = try sealer.seal(plaintext, to: stored)
                return try template.render(envelope: Envelope(kid: template.kid, enc: enc, ct: ct))
                    .requestBody(ttlSeconds: 3600).count
            case .webPush:
                throw PushError(.providerError, "bench plan: unexpected web push")
            }
        }
        func measure(_ device: DeviceSnapshot, _ n: Int) throws -> Double {
            sink &+= try body(device)
            let start = threadCPUMicros()
            for _ in 0..<n { sink &+= try body(device) }
            return (threadCPUMicros() - start) / Double(n)
        }
        let plainUs = try measure(plain, iterations)
        let sealedUs = try measure(sealedDevice, max(1, iterations / 10))
        // A single-user notification's shape (the worker builds one planner per notification):
        // the planner's setup for the notification plus its one plaintext iOS delivery.
        let notificationID = UUID()  // made once: a UUID() per notification would time getrandom
        func single() throws -> Int {
            let planner = DeliveryPlanner(content: content, placeholders: AppPlaceholders(title: "New message", body: ""),
                                          requireEncryption: false, mode: .test, notificationID: notificationID,
                                          platforms: ProviderTable.standard.planning, preparing: [plain.platform])
            guard case .send(let p) = planner.plan(plain), case .plaintext(let payload) = p.body else {
                throw PushError(.providerError, "bench plan refused")
            }
            return payload.requestBody(ttlSeconds: 3600).count
        }
        sink &+= try single()
        let singleStart = threadCPUMicros()
        for _ in 0..<iterations { sink &+= try single() }
        let singleUs = (threadCPUMicros() - singleStart) / Double(iterations)
        let fields = ["plaintext_us": fmt(plainUs), "encrypted_us": fmt(sealedUs), "single_notification_us": fmt(singleUs),
                      "bytes_checksum": String(sink)]
        out.emit(KV(fields: fields)) { text(fields) }
    }

    // MARK: - Helpers

    static func fmt(_ v: Double) -> String { String(format: "%.3f", v) }

    static func text(_ fields: [String: String]) -> String {
        fields.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: "\n")
    }

    static func threadCPUMicros() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &spec)
        return Double(spec.tv_sec) * 1e6 + Double(spec.tv_nsec) / 1e3
    }
}

/// A flag set from several threads (a failed seal during `bench seal`).
final class ManagedFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() { lock.withLock { value = true } }
    var isSet: Bool { lock.withLock { value } }
}
