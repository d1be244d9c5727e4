import Foundation
import PushCore
import PushProviders

/// CPU cost of sending through a provider client, for `scripts/bench` (DESIGN "scale path").
/// Measures process CPU (user + system, `getrusage(RUSAGE_SELF)`) around sends to a fake or real
/// endpoint, so it includes TLS, HTTP/2 framing, JWT reuse and answer parsing, but not the server.
public enum ProviderBenchmark {
    /// One measured run.
    public struct Result: Sendable, CustomStringConvertible {
        /// Label: `multiplexed(batch N)` or `sequential`.
        public var mode: String
        /// Requests sent.
        public var requests: Int
        /// Requests answered with HTTP 200.
        public var succeeded: Int
        /// Process CPU microseconds (user + system) per request.
        public var cpuMicrosPerRequest: Double
        /// Wall-clock milliseconds for the whole run.
        public var wallMillis: Double
        /// Connections the client opened during the run.
        public var connectionsOpened: Int

        public var description: String {
            String(format: "%@: %d requests, %d ok, %.1f us CPU/request, %.0f ms wall, %d new connections",
                   mode, requests, succeeded, cpuMicrosPerRequest, wallMillis, connectionsOpened)
        }
    }

    /// Sends `count` requests made by `makeRequest(i)` through `provider` in batches of `batchSize`
    /// (1 = one request at a time, each waiting for its answer) and measures CPU per request.
    /// - Parameters:
    ///   - provider: e.g. an `APNsClient` pointed at `scripts/fakes/fake_apns.py`.
    ///   - connections: reads the client's opened-connection counter (e.g. `{ apns.http.connectionsOpened }`).
    public static func run(provider: PushProvider, count: Int, batchSize: Int,
                           connections: () -> Int = { 0 },
                           makeRequest: (Int) -> ProviderRequest) -> Result {
        let size = max(1, batchSize)
        let requests = (0..<max(0, count)).map(makeRequest)
        let connectionsBefore = connections()
        let cpuBefore = processCPUMicros()
        let wallBefore = DispatchTime.now().uptimeNanoseconds
        var succeeded = 0
        var start = 0
        while start < requests.count {
            let end = min(requests.count, start + size)
            succeeded += provider.send(Array(requests[start..<end])).filter { $0.httpStatus == 200 }.count
            start = end
        }
        let cpu = processCPUMicros() - cpuBefore
        let wall = Double(DispatchTime.now().uptimeNanoseconds - wallBefore) / 1_000_000
        return Result(mode: size == 1 ? "sequential" : "multiplexed(batch \(size))", requests: requests.count,
                      succeeded: succeeded, cpuMicrosPerRequest: requests.isEmpty ? 0 : cpu / Double(requests.count),
                      wallMillis: wall, connectionsOpened: connections() - connectionsBefore)
    }

    /// Runs `count` requests multiplexed (`batchSize` per batch), then `count` one at a time.
    /// - Returns: both results, multiplexed first.
    public static func compare(provider: PushProvider, count: Int, batchSize: Int = 100,
                               connections: () -> Int = { 0 },
                               makeRequest: (Int) -> ProviderRequest) -> (multiplexed: Result, sequential: Result) {
        let multiplexed = run(provider: provider, count: count, batchSize: batchSize, connections: connections,
                              makeRequest: makeRequest)
        let sequential = run(provider: provider, count: count, batchSize: 1, connections: connections,
                             makeRequest: makeRequest)
        return (multiplexed, sequential)
    }

    /// Runs every batch size of `batchSizes` `rounds` times, interleaved (round 1 of every size, then
    /// round 2, ...) so that a change in the machine's load spreads over all sizes; each run sends
    /// `requestsPerRun` requests (`requestsPerRun(size)`).
    /// - Returns: per batch size, its runs in order (take the median of `cpuMicrosPerRequest`).
    public static func sweep(provider: PushProvider, batchSizes: [Int], rounds: Int,
                             requestsPerRun: (Int) -> Int, connections: () -> Int = { 0 },
                             makeRequest: (Int) -> ProviderRequest) -> [Int: [Result]] {
        var results: [Int: [Result]] = [:]
        var next = 0
        for _ in 0..<max(1, rounds) {
            for size in batchSizes {
                let count = requestsPerRun(size), first = next
                next += count
                let r = run(provider: provider, count: count, batchSize: size, connections: connections) {
                    makeRequest(first + $0)
                }
                results[size, default: []].append(r)
            }
        }
        return results
    }

    /// Median of `values` (the mean of the two middle ones for an even count); 0 for none.
    public static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        let mid = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
    }

    /// User + system CPU of this process so far, in microseconds.
    public static func processCPUMicros() -> Double {
        var usage = rusage()
        guard getrusage(RUSAGE_SELF.rawValue, &usage) == 0 else { return 0 }
        func micros(_ t: timeval) -> Double { Double(t.tv_sec) * 1_000_000 + Double(t.tv_usec) }
        return micros(usage.ru_utime) + micros(usage.ru_stime)
    }
}
