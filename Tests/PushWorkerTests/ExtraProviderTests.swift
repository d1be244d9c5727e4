import Foundation
import PushCore
import PushCrypto
import PushProviders
import PushStore
import PushTestSupport
@testable import PushWorker
import XCTest

/// A provider registered from the test target with no product file changed: one descriptor
/// (platform, credential kind, metric label, payload writer, answer rules, client factory) added
/// to the provider table, and a live notification reaches its devices through the real worker and
/// live router: planned by its writer (sealed to the device key when it has one), sent by its
/// client, its answers read by its rules, its label in the delivery rows and the metrics.
final class ExtraProviderTests: WorkerTestCase {
    /// "Pigeon": devices addressed by a token; a JSON body `{"msg":...}` in clear or `{"e":ENVELOPE}`
    /// sealed; 200 sent, 404 "Flown" = the token is gone, 503 transient.
    struct PigeonWriter: PayloadWriter {
        var encryptsItself: Bool { false }

        func prepare(_ n: PreparedNotification) -> any PreparedPayloads { Prepared(n: n) }

        struct Prepared: PreparedPayloads {
            let n: PreparedNotification

            func payload(token: String, kid: String?) -> (check: SizeCheck, body: PlannedDelivery.Body) {
                guard let kid else {
                    var body = Array(#"{"msg":"#.utf8)
                    JSONWriter.appendString(n.content.title ?? "", to: &body)
                    body.append(0x7d)
                    return (PayloadSizeRule.check(.plaintext, contentLength: body.count), .plaintext(.body(body)))
                }
                let prefix = Array(#"{"e":"#.utf8), suffix: [UInt8] = [0x7d]
                let check = PayloadSizeRule.check(.envelope(fixed: prefix.count + suffix.count, kid: kid),
                                                  contentLength: n.sealedPlaintext.count)
                return (check, .sealed(plaintext: n.sealedPlaintext, template: .wrapped(
                    prefix: prefix, suffix: suffix, kid: kid, plaintextLength: n.sealedPlaintext.count, finalSize: check.size)))
            }
        }
    }

    struct PigeonRules: AnswerRules {
        var name: String { "pigeon" }
        func row(status: Int, reason: String, answer: ProviderAnswer) -> ProviderAnswerTable.Row? {
            reason == "Flown" ? .unregistered : nil
        }
    }

    /// Its sets: a `loft` of lowercase letters in `config`, a secret of 1 to 64 bytes; nothing else.
    struct PigeonCredentialRules: CredentialRules {
        var kind: CredentialKind { CredentialKind(rawValue: "pigeon") }
        var identifierKeys: [String] { ["loft"] }
        func validate(config: [String: String], secret: [UInt8]) throws -> [String: String] {
            guard let loft = config["loft"], !loft.isEmpty, loft.allSatisfy({ $0.isASCII && $0.isLowercase }) else {
                throw PushError(.validationError, "loft: must be lowercase letters", field: "loft")
            }
            guard config.count == 1 else { throw PushError(.validationError, "config: only loft", field: "config") }
            guard (1...64).contains(secret.count) else { throw PushError(.validationError, "secret: 1 to 64 bytes", field: "secret") }
            return ["loft": loft]
        }
    }

    /// Answers by token: `gone-*` 404 Flown, anything else 200; records every request.
    final class PigeonClient: PushProvider, @unchecked Sendable {
        let lock = NSLock()
        var requests: [ProviderRequest] = []
        let loft: String

        init(loft: String) { self.loft = loft }

        func send(_ batch: [ProviderRequest]) -> [ProviderAnswer] {
            lock.withLock { requests += batch }
            return batch.map { r in
                r.deviceToken.hasPrefix("gone-") ? ProviderAnswer(transport: .response, httpStatus: 404, reason: "Flown")
                    : ProviderAnswer(transport: .response, httpStatus: 200, messageId: "\(loft)-\(r.apnsId)")
            }
        }
    }

    let clients = LockedBox<[PigeonClient]>([])

    /// The descriptor, as a provider's own file would declare it; each client it builds is added to `clients`.
    static func pigeon(recordingInto clients: LockedBox<[PigeonClient]>) -> ProviderDescriptor {
        ProviderDescriptor(platform: "pigeon", addressing: .token(apnsEnvironment: false),
                           credentials: PigeonCredentialRules(), label: ProviderKind(rawValue: "pigeon"),
                           payload: PigeonWriter(), answers: PigeonRules()) { set, _ in
            let client = PigeonClient(loft: set.identifiers["loft"] ?? "")
            clients.update { $0.append(client) }
            return client
        }
    }

    func pigeon() -> ProviderDescriptor { Self.pigeon(recordingInto: clients) }

    private func registerPigeon(_ app: UUID, table: ProviderTable, user: String, token: String,
                                key: P256PrivateKey? = nil) throws -> UUID {
        let r = try DeviceRegistration.validate(mode: "live", platform: "pigeon", token: token, userID: user, apnsEnvironment: nil,
                                                encryptionPublicKey: key.map { .some($0.publicKey.base64URL) } ?? .none,
                                                platforms: table.addressing)
        return try world.register(app, r, appLimit: nil)
    }

    private func worker(_ table: ProviderTable, metrics: WorkerMetrics) throws -> Worker {
        let queue = try XCTUnwrap(memory)
        var rc = LiveRouter.Configuration()
        rc.providers = table
        let router = LiveRouter(credentials: queue.credentialSource, configuration: rc, apnsTokenCache: InMemoryProviderTokenCache())
        var config = WorkerConfig(owner: "pigeon-test", claimLimit: 8, retryPolicy: Self.fastRetry)
        config.providers = table
        let w = try Worker(config: config, sessions: world.sessions, router: router, metrics: metrics, log: Self.quietLog)
        w.maintainer = nil
        return w
    }

    func testAProviderRegisteredFromTheTestTargetDeliversThroughTheWorker() throws {
        let table = ProviderTable.standard.adding(pigeon())
        let queue = try XCTUnwrap(memory)
        let app = try createApp()
        queue.credentialSet(app: app, kind: CredentialKind(rawValue: "pigeon"), identifiers: ["loft": "north"], secret: Array("s".utf8))
        let key = try P256PrivateKey.generate()
        let sealed = try registerPigeon(app, table: table, user: "u1", token: "bird-1", key: key)
        let plain = try registerPigeon(app, table: table, user: "u1", token: "bird-2")
        let gone = try registerPigeon(app, table: table, user: "u1", token: "gone-3")
        var q = EnqueueRequest(appID: app, mode: "live", userIDs: ["u1"])
        q.title = "Coo"
        let n = try world.enqueue(q).id
        let metrics = WorkerMetrics()
        try drain(try worker(table, metrics: metrics))

        try assertPigeonDelivered(n, clients: clients.value, sealed: (sealed, key), plain: plain, gone: gone, metrics: metrics)
        XCTAssertEqual(queue.credential(app: app, kind: CredentialKind(rawValue: "pigeon"))?.state, .verified,
                       "its credential kind: the first live acceptance verifies the set (R-APP-3)")
        metrics.preregisterSeries(providers: table)
        XCTAssertNotNil(metrics.credentialsInvalid.snapshot[["pigeon"]], "its credential kind has its series")
    }

    /// The control: the same device under the standard table fails only its own delivery
    /// UNKNOWN_PLATFORM (the planner finds no writer), and registering it is refused.
    func testWithoutItsDescriptorThePlatformIsUnknown() throws {
        let table = ProviderTable.standard.adding(pigeon())
        let app = try createApp()
        let device = try registerPigeon(app, table: table, user: "u1", token: "bird-1")
        XCTAssertThrowsError(try registerPigeon(app, table: .standard, user: "u1", token: "bird-2")) { error in
            XCTAssertEqual((error as? PushError)?.code, .validationError)
        }
        var q = EnqueueRequest(appID: app, mode: "live", userIDs: ["u1"])
        q.title = "Coo"
        let n = try world.enqueue(q).id
        try drain(try worker(.standard, metrics: WorkerMetrics()))
        XCTAssertEqual(try deliveries(n)[device]?.errorCode, "UNKNOWN_PLATFORM")
        XCTAssertTrue(clients.value.isEmpty, "no client was built")
        try assertLedgerInvariants(n)
    }
}

extension WorkerTestCase {
    /// What the worker's delivery of notification `n` ("Coo", to `bird-1` sealed to `key`, `bird-2`
    /// plain, `gone-3`) through the pigeon provider shows on either store: its client got every
    /// push, its writer sealed to the device key with nothing in clear and wrote the plain body, its
    /// answer rules made 404 Flown UNREGISTERED (the device deactivated), the set's identifiers
    /// in the message ids, the ledger netting the two sent, its metric label counting them.
    func assertPigeonDelivered(_ n: UUID, clients: [ExtraProviderTests.PigeonClient], sealed: (device: UUID, key: P256PrivateKey),
                               plain: UUID, gone: UUID, metrics: WorkerMetrics,
                               file: StaticString = #filePath, line: UInt = #line) throws {
        let requests: [ProviderRequest] = clients.flatMap { (c: ExtraProviderTests.PigeonClient) in c.lock.withLock { c.requests } }
        XCTAssertEqual(Set(requests.map(\.deviceToken)), ["bird-1", "bird-2", "gone-3"], "its client got every push",
                       file: file, line: line)
        let rows = try deliveries(n)
        XCTAssertEqual(rows[sealed.device]?.status, "sent", file: file, line: line)
        XCTAssertEqual(rows[sealed.device]?.encrypted, true, file: file, line: line)
        XCTAssertEqual(rows[sealed.device]?.providerMessageID?.hasPrefix("north-"), true, "built from the set's identifiers",
                       file: file, line: line)
        let sealedBody = try XCTUnwrap(requests.first { $0.deviceToken == "bird-1" }?.payload, file: file, line: line)
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(sealedBody)) as? [String: Any], file: file, line: line)
        XCTAssertEqual((object["e"] as? [String: Any])?["kid"] as? String, sealed.key.publicKey.kid,
                       "its writer's template, sealed to the device key", file: file, line: line)
        XCTAssertFalse(String(decoding: sealedBody, as: UTF8.self).contains("Coo"), "no content in clear", file: file, line: line)
        XCTAssertEqual(requests.first { $0.deviceToken == "bird-2" }?.payload, Array(#"{"msg":"Coo"}"#.utf8), file: file, line: line)
        XCTAssertEqual(rows[plain]?.status, "sent", file: file, line: line)
        XCTAssertEqual(rows[gone]?.errorCode, "UNREGISTERED", "its answer rules: 404 Flown", file: file, line: line)
        XCTAssertEqual(try world.device(gone).active, false, file: file, line: line)
        XCTAssertEqual(try notification(n).deviceCount, 3, file: file, line: line)
        try assertLedgerInvariants(n, file: file, line: line)
        XCTAssertEqual(metrics.deliveries.value(["pigeon", "sent", ""]), 2, "its metric label", file: file, line: line)
        XCTAssertEqual(metrics.deliveries.value(["pigeon", "failed", "UNREGISTERED"]), 1, file: file, line: line)
    }
}
