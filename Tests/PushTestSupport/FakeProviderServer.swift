import Foundation

/// One fake provider (`fake_apns.py` / `fake_fcm.py`, HTTP/2; `fake_twilio.py`, HTTP/1.1) on
/// 127.0.0.1, serving HTTPS with the `FakeMaterial` server certificate. Its log lines carry a
/// `kind` (`push`, `hang`, `connection`, `oauth`; Twilio: `request`, `message`).
public final class FakeProviderServer {
    private let process: FakeProcess

    private init(process: FakeProcess) { self.process = process }

    /// The listening port.
    public var port: Int { process.port }
    /// The JSONL log file.
    public var logPath: String { process.logPath }
    /// `https://127.0.0.1:<port>`.
    public var baseURL: String { process.baseURL }

    /// Starts `script` with the shared certificate (`--cert`, `--key`) and `arguments`, waiting
    /// (at most 15 s) for its port.
    /// - Throws: `FakeProcessError` (`mkcerts`, `fake_start`).
    public static func start(_ script: String, _ arguments: [String]) throws -> FakeProviderServer {
        let cert = try FakeMaterial.file("server.pem"), key = try FakeMaterial.file("server.key")
        return FakeProviderServer(process: try FakeProcess.start(script, arguments: ["--cert", cert, "--key", key] + arguments))
    }

    /// Stops the subprocess (idempotent).
    public func stop() { process.stop() }

    /// Log lines of one `kind` (`push`, `hang`, `connection`, `oauth`) as JSON objects, in order.
    public func log(_ kind: String) -> [[String: Any]] { process.log(where: "kind", is: kind) }
}

// MARK: - Launchers

extension FakeProviderServer {
    /// `fake_apns.py` accepting ES256 provider tokens signed with `FakeMaterial`'s `apns_key.p8`
    /// for `teamID`/`keyID`, and only `topic`; `extra` adds options (`--initial-streams 1`,
    /// `--max-streams N`, ...).
    /// - Throws: `FakeProcessError` (`mkcerts`, `fake_start`).
    public static func startAPNs(teamID: String, keyID: String, topic: String,
                                 extra: [String] = []) throws -> FakeProviderServer {
        try start("fake_apns.py", ["--public-key", try FakeMaterial.file("apns_pub.pem"), "--team-id", teamID,
                                   "--key-id", keyID, "--topic", topic] + extra)
    }

    /// `fake_fcm.py` accepting OAuth2 assertions signed with `FakeMaterial`'s `sa_key.pem` by
    /// `clientEmail`, for project `projectID`; `extra` adds options.
    /// - Throws: `FakeProcessError` (`mkcerts`, `fake_start`).
    public static func startFCM(clientEmail: String, projectID: String,
                                extra: [String] = []) throws -> FakeProviderServer {
        try start("fake_fcm.py", ["--sa-public-key", try FakeMaterial.file("sa_pub.pem"), "--client-email", clientEmail,
                                  "--project-id", projectID] + extra)
    }

    /// `fake_twilio.py` (HTTP/1.1 over TLS) answering for `accountSID`, taking basic auth with
    /// `authToken` and, when given, with the API key `apiKeySID` / `apiKeySecret`; `extra` adds
    /// options (`--fail-times N`, `--retry-after S`). Log kinds: `connection`, `request`, `message`.
    /// - Throws: `FakeProcessError` (`mkcerts`, `fake_start`).
    public static func startTwilio(accountSID: String, authToken: String, apiKeySID: String = "",
                                   apiKeySecret: String = "", extra: [String] = []) throws -> FakeProviderServer {
        try start("fake_twilio.py", ["--account-sid", accountSID, "--auth-token", authToken,
                                     "--api-key-sid", apiKeySID, "--api-key-secret", apiKeySecret] + extra)
    }
}

extension FakeProviderServer: StoppableFake {}
