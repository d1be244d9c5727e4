import Foundation
import PushBench
import PushCore
import PushProviders

/// `pushfleet bench apns|fcm`: CPU per request of `APNsClient` / `FCMClient` against a fake on
/// 127.0.0.1 (`scripts/fakes`), for `scripts/bench` (docs/bench.md "provider clients").
///
/// Each batch size of `--batch-sizes` (default `1,100,500`) runs `--rounds` times (default 3),
/// interleaved, each run `--count` requests (default 2000; batch size 1 sends a quarter of that,
/// at least 200). The figure per size is the median run's process CPU (user + system) per request;
/// the client's connection set-up, TLS handshake and token are made in a warm-up that is not
/// counted. `--transport nghttp2|libcurl` picks the HTTP/2 client (default nghttp2). Output:
/// `<size>_cpu_us`, `<size>_wall_ms` (median run), `<size>_ok` (answers 200, all
/// runs) and `<size>_requests`, plus `connections_opened` and `requests_total` (warm-up included,
/// for comparing with the fake's log).
extension BenchCommands {
    static func apns(_ args: Arguments, _ out: Output) throws {
        var config = APNsClient.Configuration(teamId: try args.required("team-id"), keyId: try args.required("key-id"),
                                              topic: try args.required("topic"))
        config.productionBaseURL = try args.required("url")
        config.sandboxBaseURL = config.productionBaseURL
        config.http = try httpConfiguration(args)
        let pem = try String(contentsOfFile: try args.required("key-file"), encoding: .utf8)
        let client = try APNsClient.make(configuration: config, privateKeyPEM: pem)
        let payload = Array(#"{"aps":{"alert":{"title":"Your order shipped","body":"Order 1234 is on its way"},"badge":1},"order":"1234"}"#.utf8)
        try sweep(args, out, provider: client, connections: { client.http.connectionsOpened }) { i in
            ProviderRequest(deliveryId: Int64(i), deviceToken: String(format: "%064x", i), payload: payload,
                            expirationUnixSeconds: 0, apnsId: UUID().uuidString.lowercased())
        }
    }

    static func fcm(_ args: Arguments, _ out: Output) throws {
        let url = try args.required("url")
        let pem = try String(contentsOfFile: try args.required("sa-key-file"), encoding: .utf8)
        let account = FCMServiceAccount(projectId: try args.required("project-id"),
                                        clientEmail: try args.required("client-email"), privateKeyPEM: pem)
        var config = FCMClient.Configuration()
        config.baseURL = url
        config.tokenURLOverride = url + "/token"
        config.http = try httpConfiguration(args)
        let client = try FCMClient.make(account: account, configuration: config)
        try sweep(args, out, provider: client, connections: { client.http.connectionsOpened }) { i in
            let token = String(format: "%0152x", i)
            // The product's own writer, so the body is what the worker sends (`"priority":"HIGH"`), which the
            // strict fake checks (a hand-written `"high"` was refused 400 and the phase measured nothing).
            let message = FCMMessage(token: token, data: [.init("hk", "x"), .init("order", "1234")], priority: .high)
            return ProviderRequest(deliveryId: Int64(i), deviceToken: token, payload: message.requestBody(ttlSeconds: 3600),
                                   apnsId: "")
        }
    }

    /// `--ca-file` and `--transport nghttp2|libcurl` (default nghttp2, the client APNs and FCM use).
    private static func httpConfiguration(_ args: Arguments) throws -> HTTPClientConfiguration {
        var http = HTTPClientConfiguration(caFile: try args.required("ca-file"))
        if let name = args.value("transport") {
            guard let kind = HTTPTransportKind(rawValue: name) else {
                throw CLIError.usage("--transport: nghttp2 or libcurl")
            }
            http.transport = kind
        }
        return http
    }

    private static func sweep(_ args: Arguments, _ out: Output, provider: PushProvider, connections: () -> Int,
                              makeRequest: (Int) -> ProviderRequest) throws {
        let count = max(1, try args.int("count") ?? 2000)
        let rounds = max(1, try args.int("rounds") ?? 3)
        let sizes = try (args.value("batch-sizes") ?? "1,100,500").split(separator: ",").map { text -> Int in
            guard let n = Int(text), n > 0 else { throw CLIError.usage("--batch-sizes: positive integers, comma-separated") }
            return n
        }
        let perRun = { (size: Int) in size == 1 ? max(200, count / 4) : count }
        // Warm-up: connection, TLS handshake and token are not per-request costs.
        let warm = ProviderBenchmark.run(provider: provider, count: 20, batchSize: 20) { makeRequest(10_000_000 + $0) }
        guard warm.succeeded == warm.requests else {
            throw CLIError(code: "BENCH_PROVIDER_FAILED", message: "warm-up: \(warm.succeeded) of \(warm.requests) answered 200",
                           exitCode: 1)
        }
        let before = connections()
        let results = ProviderBenchmark.sweep(provider: provider, batchSizes: sizes, rounds: rounds, requestsPerRun: perRun,
                                              makeRequest: makeRequest)
        var fields = ["rounds": String(rounds), "batch_sizes": sizes.map(String.init).joined(separator: ","),
                      "transport": args.value("transport") ?? HTTPTransportKind.nghttp2.rawValue,
                      "connections_opened": String(connections() - before)]
        var total = warm.requests
        for size in sizes {
            let runs = results[size] ?? []
            let cpu = ProviderBenchmark.median(runs.map(\.cpuMicrosPerRequest))
            let wall = ProviderBenchmark.median(runs.map(\.wallMillis))
            let sent = runs.reduce(0) { $0 + $1.requests }
            total += sent
            fields["\(size)_cpu_us"] = fmt(cpu)
            fields["\(size)_cpu_us_all"] = runs.map { fmt($0.cpuMicrosPerRequest) }.joined(separator: ",")
            fields["\(size)_wall_ms"] = fmt(wall)
            fields["\(size)_requests"] = String(sent)
            fields["\(size)_ok"] = String(runs.reduce(0) { $0 + $1.succeeded })
        }
        fields["requests_total"] = String(total)
        out.emit(KV(fields: fields)) { text(fields) }
    }
}
