import Dispatch
import Foundation
import PushCore
import PushCrypto
import PushStore

/// Turns one device batch into delivery records: plan each device (PushCore, pure), seal the
/// encrypted ones across cores at send time with each device's current key (R-ENC-8), hand the
/// payloads to the provider router, and classify every answer through PushCore's answer table and
/// retry policy. No database access here: the caller loads the batch and records the result.
public final class BatchProcessor {
    /// Per-delivery retry policy (R-SEND-12).
    public let retryPolicy: RetryPolicy
    /// Where pushes go.
    public let router: ProviderRouter
    private let sealer: EnvelopeSealer
    private let jitter: () -> Double
    private let metrics: WorkerMetrics?

    /// - Parameters:
    ///   - jitter: a source of values in [0, 1) for backoff jitter (injected for tests).
    public init(router: ProviderRouter, retryPolicy: RetryPolicy = .default, metrics: WorkerMetrics? = nil,
                jitter: @escaping () -> Double = { Double.random(in: 0..<1) }) throws {
        self.router = router
        self.retryPolicy = retryPolicy
        self.sealer = try EnvelopeSealer()
        self.jitter = jitter
        self.metrics = metrics
    }

    /// The records (one per device not yet final) and credential changes for one batch.
    /// - Parameters:
    ///   - job: the claimed job with its notification and app policy.
    ///   - encrypted: the notification's `encrypted` flag (require_encryption at send time, R-SEND-2).
    ///   - devices: the batch's devices as loaded now.
    ///   - now: the send instant (the request time stands in for FCM's verdict time, R-DEV-8).
    public func process(job: ClaimedJob, encrypted: Bool, devices: [BatchDeviceRow],
                        now: Date) -> (records: [DeliveryRecord], credentials: CredentialChanges) {
        let n = job.notification
        let mode = Mode(rawValue: n.mode) ?? .test
        var records: [DeliveryRecord] = []
        var credentialChanges = CredentialChanges()

        // Content; a notification whose data is not a JSON object fails every delivery (INVALID_DATA).
        let content: NotificationContent
        do {
            content = try Self.content(of: n)
        } catch {
            let e = error as? PushError ?? PushError(.invalidData, "data is not a JSON object")
            for d in devices where !Self.isFinal(d) {
                records.append(Self.failed(d, e, netsCharge: false))
            }
            return (records, credentialChanges)
        }
        var states = CredentialStates()
        if mode == .live {
            do { states = try router.credentialStates(appID: n.appID) } catch {
                states = CredentialStates(unusable: Set(Platform.allCases))
            }
        }
        let planner = DeliveryPlanner(content: content,
                                      placeholders: AppPlaceholders(title: job.app.placeholderTitle,
                                                                    body: job.app.placeholderBody),
                                      requireEncryption: encrypted, mode: mode, invalidCredentials: states.unusable)
        let expiry = Expiry(accepted: n.acceptedAt, sendAt: n.sendAt, ttlSeconds: n.ttlSeconds)

        // 1. Plan (pure) and pick what must be sealed.
        var work: [(device: BatchDeviceRow, plan: PlannedDelivery, ttl: Expiry.RequestTTL)] = []
        for d in devices {
            if Self.isFinal(d) { continue }
            if let at = d.nextAttemptAt, at > now.addingTimeInterval(0.25) {
                // Not yet due: carried forward unchanged into the successor job.
                records.append(DeliveryRecord(deviceID: d.deviceID, status: "retrying", errorCode: nil,
                                              encrypted: false, attempts: d.attempts, failures: d.failures,
                                              nextAttemptAt: at))
                continue
            }
            guard d.found, d.targeted else {
                records.append(Self.failed(d, PushError(.deviceGone, "device no longer targeted at send time"),
                                           netsCharge: false))
                continue
            }
            guard let ttl = expiry.request(now: now, firstAttempt: d.attempts == 0) else {
                records.append(Self.failed(d, PushError(.expired, "the notification expired before it could be sent"),
                                           netsCharge: false))
                continue
            }
            let snapshot = DeviceSnapshot(platform: d.platform ?? "", token: d.token ?? d.endpoint ?? "",
                                          apnsEnvironment: d.apnsEnvironment.flatMap(APNsEnvironment.init(rawValue:)),
                                          publicKey: d.publicKey, kid: d.kid)
            switch planner.plan(snapshot) {
            case .refuse(let error, _):
                records.append(Self.failed(d, error, netsCharge: LedgerRule.netsCharge(.failed(error.code))))
            case .send(let plan):
                work.append((d, plan, ttl))
            }
        }

        // 2. Seal / encrypt across cores (CPU-bound), then render the final bytes.
        var bodies = [Result<[UInt8], PushError>](repeating: .failure(PushError(.providerError, "not built")),
                                                  count: work.count)
        let sealStart = DispatchTime.now().uptimeNanoseconds
        bodies.withUnsafeMutableBufferPointer { out in
            let base = out.baseAddress!
            let buildOne = { (i: Int) in
                base[i] = self.build(work[i].plan, device: work[i].device, ttl: work[i].ttl)
            }
            if work.count >= 8 {
                DispatchQueue.concurrentPerform(iterations: work.count, execute: buildOne)
            } else {
                for i in 0..<work.count { buildOne(i) }
            }
        }
        let sealed = work.reduce(0) { $0 + ($1.plan.encrypted ? 1 : 0) }
        if sealed > 0 {
            metrics?.observeSeal(seconds: Double(DispatchTime.now().uptimeNanoseconds - sealStart) / 1e9 / Double(sealed),
                                 count: sealed)
        }

        // 3. Send what was built.
        var pushes: [OutboundPush] = []
        var pushIndex: [Int] = []
        for (i, item) in work.enumerated() {
            switch bodies[i] {
            case .failure(let error):
                records.append(Self.failed(item.device, error, netsCharge: LedgerRule.netsCharge(.failed(error.code))))
            case .success(let body):
                pushes.append(OutboundPush(deviceID: item.device.deviceID, platform: item.plan.platform,
                                           token: item.plan.platform == .web ? (item.device.endpoint ?? "") : item.plan.token,
                                           apnsEnvironment: item.plan.apnsEnvironment, body: body,
                                           priority: item.plan.priority, apnsExpiration: item.ttl.apnsExpiration,
                                           secondsLeft: item.ttl.secondsLeft, collapseKey: item.plan.collapseKey,
                                           apnsID: item.device.apnsID, previousAttempts: item.device.attempts))
                pushIndex.append(i)
            }
        }
        let answers = pushes.isEmpty ? [] : router.send(appID: n.appID, mode: mode, pushes: pushes)

        // 4. Classify every answer (PushCore's table) into a record.
        for (k, push) in pushes.enumerated() {
            let item = work[pushIndex[k]]
            let (provider, answer) = k < answers.count ? answers[k]
                : (ProviderKind.simulator, ProviderAnswer(transport: .notSent, rawDetail: "no answer from router"))
            let record = classify(answer, provider: provider, push: push, device: item.device,
                                  encrypted: item.plan.encrypted, states: states, expiresAt: expiry.expiresAt,
                                  now: now, credentials: &credentialChanges, testPayload: mode == .test ? push.body : nil)
            records.append(record)
        }
        return (records, credentialChanges)
    }

    // MARK: - Building payloads

    private func build(_ plan: PlannedDelivery, device: BatchDeviceRow, ttl: Expiry.RequestTTL) -> Result<[UInt8], PushError> {
        switch plan.body {
        case .plaintext(let payload):
            return .success(payload.requestBody(ttlSeconds: ttl.secondsLeft))
        case .sealed(let plaintext, let template):
            do {
                // R-ENC-8: sealed now, to the key stored now; validated fully at registration.
                let key = try P256PublicKey(validatedStoredBytes: device.publicKey ?? [])
                let (enc, ct) = try sealer.seal(plaintext, to: key)
                let payload = try template.render(envelope: Envelope(kid: template.kid, enc: enc, ct: ct))
                return .success(payload.requestBody(ttlSeconds: ttl.secondsLeft))
            } catch let e as PushError {
                return .failure(e)
            } catch let e as CryptoError {
                return .failure(PushError(.invalidDeviceKey, "the stored device key is not usable: \(e.code.rawValue)"))
            } catch {
                return .failure(PushError(.invalidDeviceKey, "the stored device key is not usable"))
            }
        case .webPush(let plaintext):
            guard let p256dh = device.p256dh, let auth = device.authSecret else {
                return .failure(PushError(.invalidSubscription, "the stored subscription has no p256dh or auth"))
            }
            do {
                return .success(try WebPushEncryption.encrypt(plaintext: plaintext, p256dh: p256dh, auth: auth))
            } catch {
                return .failure(PushError(.invalidSubscription, "the stored subscription keys are not usable"))
            }
        }
    }

    // MARK: - Answers

    private func classify(_ answer: ProviderAnswer, provider: ProviderKind, push: OutboundPush, device: BatchDeviceRow,
                          encrypted: Bool, states: CredentialStates, expiresAt: Date, now: Date,
                          credentials: inout CredentialChanges, testPayload: [UInt8]?) -> DeliveryRecord {
        let attempts = device.attempts + 1
        var r = DeliveryRecord(deviceID: device.deviceID, status: "failed", encrypted: encrypted,
                               provider: provider.rawValue, attempts: attempts, failures: device.failures,
                               payload: testPayload)
        let kind = Self.credentialKind(push.platform)
        let verified = states.verified.contains(push.platform)
        let outcome = ProviderAnswerTable.classify(answer, provider: provider, credentialsVerified: verified)
        switch outcome {
        case .sent(let id):
            r.status = "sent"
            r.providerMessageID = id ?? answer.messageId
            if provider != .simulator { credentials.accepted.append(kind) }
        case .deactivateDevice(let reason, let at):
            r.errorCode = reason.rawValue
            r.deactivateReason = reason.rawValue
            r.verdictAt = at ?? now
        case .appMismatch(let blame):
            r.errorCode = ErrorCode.appMismatch.rawValue
            if blame == .device {
                r.deactivateReason = ErrorCode.appMismatch.rawValue
                r.verdictAt = now
            } else {
                credentials.invalid.append((kind, answer.reason ?? "APP_MISMATCH"))
            }
        case .credentialsInvalid(let reason):
            r.errorCode = ErrorCode.credentialsInvalid.rawValue
            credentials.invalid.append((kind, reason))
        case .payloadTooLarge:
            r.errorCode = ErrorCode.pushPayloadTooLarge.rawValue
        case .failed(let error):
            r.errorCode = error.code.rawValue
            r.errorDetail = error.message
        case .transient, .deferral:
            let decision: RetryPolicy.Decision
            if case .deferral(let after) = outcome {
                decision = retryPolicy.next(after: .deferral(retryAfter: after), failedAttempts: device.failures,
                                            deferrals: attempts - device.failures, now: now, expiresAt: expiresAt,
                                            jitter: jitter())
            } else {
                r.failures = device.failures + 1
                decision = retryPolicy.next(after: .transient, failedAttempts: r.failures, now: now,
                                            expiresAt: expiresAt, jitter: jitter())
            }
            r.errorDetail = Self.detail(answer)
            switch decision {
            case .retry(let at):
                r.status = "retrying"
                r.nextAttemptAt = at
                metrics?.retries.increment()
                return r
            case .exhausted, .expired:
                r.errorCode = decision.errorCode?.rawValue
            }
        }
        if r.status != "sent", r.errorDetail == nil { r.errorDetail = Self.detail(answer) }
        r.netsCharge = LedgerRule.netsCharge(Self.ending(r, outcome: outcome))
        return r
    }

    // MARK: - Helpers

    static func content(of n: NotificationRow) throws -> NotificationContent {
        let data = try n.data.map { try JSONParser.parseDataObject($0) }
        let content = NotificationContent(title: n.title, body: n.body, data: data, badge: n.badge, sound: n.sound,
                                          threadId: n.threadID, collapseKey: n.collapseKey,
                                          priority: Priority(rawValue: n.priority) ?? .high)
        // The API may call push_enqueue without the CLI's checks: reserved data keys (`hk` would pass
        // for an envelope on Android) and the like are refused here too, as INVALID_DATA.
        do {
            try content.validate()
        } catch let e as PushError {
            throw PushError(.invalidData, e.message)
        }
        return content
    }

    static func isFinal(_ d: BatchDeviceRow) -> Bool {
        d.deliveryStatus == "sent" || d.deliveryStatus == "failed"
    }

    static func failed(_ d: BatchDeviceRow, _ e: PushError, netsCharge: Bool) -> DeliveryRecord {
        DeliveryRecord(deviceID: d.deviceID, status: "failed", errorCode: e.code.rawValue, errorDetail: e.message,
                       encrypted: false, attempts: d.attempts, failures: d.failures, netsCharge: netsCharge)
    }

    static func credentialKind(_ p: Platform) -> String {
        switch p {
        case .ios: return "apns"
        case .android: return "fcm"
        case .web: return "webpush"
        }
    }

    static func ending(_ r: DeliveryRecord, outcome: AnswerOutcome) -> DeliveryEnding {
        if r.status == "sent" { return .sent }
        if case .appMismatch(let blame) = outcome { return .appMismatch(blame) }
        return .failed(ErrorCode(rawValue: r.errorCode ?? "") ?? .providerError)
    }

    /// Operator detail for a non-success answer: status, reason and a bounded raw detail.
    static func detail(_ a: ProviderAnswer) -> String {
        var parts: [String] = [a.transport.rawValue]
        if let s = a.httpStatus { parts.append(String(s)) }
        if let reason = a.reason { parts.append(reason) }
        if let raw = a.rawDetail { parts.append(String(raw.prefix(200))) }
        return parts.joined(separator: " ")
    }
}
