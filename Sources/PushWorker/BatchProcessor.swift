import Dispatch
import Foundation
import PushCore
import PushCrypto
import PushProviders
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
    /// The providers served: each platform's payload writer, credential kind and answer rules.
    public let providers: ProviderTable
    private let sealer: EnvelopeSealer
    private let jitter: () -> Double
    private let metrics: WorkerMetrics?
    /// The fleet-wide provider pauses (R-KIND-4); nil: nothing is ever held back.
    public let gate: ProviderGate?

    /// - Parameters:
    ///   - jitter: a source of values in [0, 1) for backoff jitter (injected for tests).
    public init(router: ProviderRouter, retryPolicy: RetryPolicy = .default, providers: ProviderTable = .standard,
                metrics: WorkerMetrics? = nil, gate: ProviderGate? = nil,
                jitter: @escaping () -> Double = { Double.random(in: 0..<1) }) throws {
        self.gate = gate
        self.router = router
        self.providers = providers
        self.retryPolicy = retryPolicy
        self.sealer = try EnvelopeSealer()
        self.jitter = jitter
        self.metrics = metrics
    }

    /// One batch to process: a claimed job, its notification's `encrypted` flag (require_encryption
    /// read at send time, R-SEND-2) and its devices as loaded now.
    public struct Input: Sendable {
        public var job: ClaimedJob
        public var encrypted: Bool
        public var devices: [BatchDeviceRow]

        public init(job: ClaimedJob, encrypted: Bool, devices: [BatchDeviceRow]) {
            self.job = job
            self.encrypted = encrypted
            self.devices = devices
        }
    }

    /// What one batch produced: a record per device not yet final, and credential changes.
    public typealias Output = (records: [DeliveryRecord], credentials: CredentialChanges)

    /// The records (one per device not yet final) and credential changes for one batch.
    /// - Parameters:
    ///   - job: the claimed job with its notification and app policy.
    ///   - encrypted: the notification's `encrypted` flag (require_encryption at send time, R-SEND-2).
    ///   - devices: the batch's devices as loaded now.
    ///   - now: the send instant (the request time stands in for FCM's verdict time, R-DEV-8).
    public func process(job: ClaimedJob, encrypted: Bool, devices: [BatchDeviceRow], now: Date) -> Output {
        processMany([Input(job: job, encrypted: encrypted, devices: devices)], now: now)[0]
    }

    /// Several batches at once (a claim's worth of small notifications): every delivery planned,
    /// all sealing spread over the cores in one pass, pushes sent per (app, mode) in one call each,
    /// answers classified. Outputs are in the order of `inputs`.
    public func processMany(_ inputs: [Input], now: Date) -> [Output] {
        var outputs = [Output](repeating: ([], CredentialChanges()), count: inputs.count)
        let planning = providers.planning
        var statesByApp: [UUID: CredentialStates] = [:]
        var work: [WorkItem] = []

        // 1. Plan (pure) and pick what must be sealed.
        for (b, input) in inputs.enumerated() {
            let n = input.job.notification
            let mode = n.mode
            let devices = input.devices
            // Content; a notification whose data is not a JSON object fails every delivery (INVALID_DATA).
            let content: NotificationContent
            do {
                content = try Self.content(of: n)
            } catch {
                let e = error as? PushError ?? PushError(.invalidData, "data is not a JSON object")
                for d in devices where !Self.isFinal(d) {
                    outputs[b].records.append(Self.failed(d, e))
                }
                continue
            }
            var states = CredentialStates()
            if mode == .live {
                if let known = statesByApp[n.appID] {
                    states = known
                } else {
                    do { states = try router.credentialStates(appID: n.appID) } catch {
                        states = CredentialStates(unusable: providers.platforms)
                    }
                    statesByApp[n.appID] = states
                }
            }
            let planner = DeliveryPlanner(content: content,
                                          placeholders: AppPlaceholders(title: input.job.app.placeholderTitle,
                                                                        body: input.job.app.placeholderBody,
                                                                        titleLocKey: input.job.app.placeholderTitleLocKey,
                                                                        bodyLocKey: input.job.app.placeholderBodyLocKey),
                                          requireEncryption: input.encrypted, mode: mode,
                                          // Written at the send time (R-IDS-1); nil: started by a
                                          // previous release, which sent it sealed.
                                          contentMode: n.contentMode ?? .sealed, notificationID: n.id,
                                          invalidCredentials: states.unusable, platforms: planning,
                                          preparing: devices.map { Platform(rawValue: $0.platform ?? "") })
            let expiry = Expiry(expiresAt: n.expiresAt, ttlSeconds: n.ttlSeconds)
            for d in devices {
                if Self.isFinal(d) { continue }
                if let at = d.nextAttemptAt, at > now.addingTimeInterval(0.25) {
                    // Not yet due: carried forward unchanged into the successor job.
                    outputs[b].records.append(DeliveryRecord(deviceID: d.deviceID, status: .retrying, attempts: d.attempts,
                                                             failures: d.failures, nextAttemptAt: at))
                    continue
                }
                guard d.found, d.targeted else {
                    outputs[b].records.append(Self.failed(d, PushError(.deviceGone, "device no longer targeted at send time")))
                    continue
                }
                guard let ttl = expiry.request(now: now, firstAttempt: d.attempts == 0) else {
                    outputs[b].records.append(Self.failed(d, PushError(.expired, "the notification expired before it could be sent")))
                    continue
                }
                let snapshot = DeviceSnapshot(platform: Platform(rawValue: d.platform ?? ""), token: d.token ?? d.endpoint ?? "",
                                              apnsEnvironment: d.apnsEnvironment,
                                              publicKey: d.publicKey, kid: d.kid)
                switch planner.plan(snapshot) {
                case .refuse(let error):
                    outputs[b].records.append(Self.failed(d, error))
                case .send(let plan):
                    work.append(WorkItem(batch: b, device: d, plan: plan, ttl: ttl, appID: n.appID, mode: mode,
                                         states: states, expiresAt: expiry.expiresAt))
                }
            }
        }

        // 2. Seal / encrypt across cores (CPU-bound), then render the final bytes.
        var bodies = [Result<[UInt8], PushError>](repeating: .failure(PushError(.providerError, "not built")),
                                                  count: work.count)
        let sealStart = DispatchTime.now().uptimeNanoseconds
        bodies.withUnsafeMutableBufferPointer { out in
            guard let base = out.baseAddress else { return }
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

        // 3. Send what was built, one router call per (app, mode).
        var groups: [GroupKey: [(item: Int, push: OutboundPush)]] = [:]
        var groupOrder: [GroupKey] = []
        for (i, item) in work.enumerated() {
            switch bodies[i] {
            case .failure(let error):
                outputs[item.batch].records.append(Self.failed(item.device, error))
            case .success(let body):
                let push = OutboundPush(deviceID: item.device.deviceID, platform: item.plan.platform,
                                        token: providers.provider(for: item.plan.platform)?.addressing == .subscription
                                            ? (item.device.endpoint ?? "") : item.plan.token,
                                        apnsEnvironment: item.plan.apnsEnvironment, body: body,
                                        priority: item.plan.priority, pushType: item.plan.pushType,
                                        apnsExpiration: item.ttl.apnsExpiration,
                                        secondsLeft: item.ttl.secondsLeft, collapseKey: item.plan.collapseKey,
                                        apnsID: item.device.apnsID, previousAttempts: item.device.attempts)
                let key = GroupKey(appID: item.appID, mode: item.mode)
                if groups[key] == nil { groupOrder.append(key) }
                groups[key, default: []].append((i, push))
            }
        }

        // 4. Per (app, mode): hold back what a paused scope holds (R-KIND-4), send the rest (a
        // paused scope's probe among them), report the answers to the gate, and classify every
        // answer (PushCore's table) into its batch's records.
        for key in groupOrder {
            let entries = groups[key] ?? []
            let scopes = gate == nil || key.mode == .test ? [] : router.pauseScopes(appID: key.appID, mode: key.mode,
                                                                                    pushes: entries.map(\.push))
            let decisions = scopes.isEmpty ? [] : gate?.admit(scopes, now: now) ?? []
            var sending: [Int] = []
            for k in entries.indices {
                guard k < decisions.count, case .hold(let until) = decisions[k] else { sending.append(k); continue }
                let item = work[entries[k].item]
                outputs[item.batch].records.append(Self.held(item.device, until: until, expiresAt: item.expiresAt, now: now,
                                                             attempted: false, encrypted: item.plan.encrypted))
                metrics?.deliveriesHeld.increment()
            }
            if sending.isEmpty { continue }
            let answers = router.send(appID: key.appID, mode: key.mode, pushes: sending.map { entries[$0].push })
            var signals = [HostSignal](repeating: .neutral, count: sending.count)
            if let gate, !scopes.isEmpty {
                for (j, k) in sending.enumerated() where j < answers.count {
                    signals[j] = HostSignal.of(answers[j].1, device: entries[k].push.deviceID.uuidString)
                    gate.report(scopes: scopes[k], signal: signals[j], decision: decisions[k], detail: Self.detail(answers[j].1),
                                now: now)
                }
            }
            for (j, k) in sending.enumerated() {
                let entry = entries[k]
                let item = work[entry.item]
                let (provider, answer) = j < answers.count ? answers[j]
                    : (ProviderKind.simulator, ProviderAnswer(transport: .notSent, rawDetail: "no answer from router"))
                // A host failure of a scope paused now (by these answers or before) is the outage's,
                // not the delivery's: held like the others, its attempt made but no failure counted.
                if signals[j].isHostFailure, let gate, let until = gate.holdAfterFailure(scopes: scopes[k], now: now) {
                    var r = Self.held(item.device, until: until, expiresAt: item.expiresAt, now: now, attempted: true,
                                      encrypted: item.plan.encrypted)
                    r.provider = provider
                    r.errorDetail = Self.detail(answer)
                    outputs[item.batch].records.append(r)
                    metrics?.deliveriesHeld.increment()
                    continue
                }
                let record = classify(answer, provider: provider, push: entry.push, device: item.device,
                                      encrypted: item.plan.encrypted, states: item.states, expiresAt: item.expiresAt,
                                      now: now, credentials: &outputs[item.batch].credentials,
                                      testPayload: key.mode == .test ? entry.push.body : nil)
                outputs[item.batch].records.append(record)
            }
        }
        return outputs
    }

    /// One delivery between planning and its answer.
    private struct WorkItem {
        var batch: Int
        var device: BatchDeviceRow
        var plan: PlannedDelivery
        var ttl: Expiry.RequestTTL
        var appID: UUID
        var mode: Mode
        var states: CredentialStates
        var expiresAt: Date
    }

    private struct GroupKey: Hashable {
        var appID: UUID
        var mode: Mode
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
        var r = DeliveryRecord(deviceID: device.deviceID, status: .failed, encrypted: encrypted,
                               provider: provider, attempts: attempts, failures: device.failures,
                               payload: testPayload)
        let kind = providers.provider(for: push.platform)?.credentialKind ?? CredentialKind(rawValue: push.platform.rawValue)
        let verified = states.verified.contains(push.platform)
        let outcome: AnswerOutcome
        if let rules = providers.answerRules(provider) {
            outcome = ProviderAnswerTable.classify(answer, rules: rules, credentialsVerified: verified)
        } else {
            outcome = .failed(PushError(.providerError, "answer from \(provider.rawValue.prefix(40)), which is not a provider of this release"))
        }
        switch outcome {
        case .sent(let id):
            r.status = .sent
            r.providerMessageID = id ?? answer.messageId
            if provider != .simulator { credentials.accepted.append(kind) }
        case .deactivateDevice(let reason, let at):
            r.errorCode = reason
            r.deactivateReason = reason
            r.verdictAt = at ?? now
        case .appMismatch(let blame):
            r.errorCode = .appMismatch
            if blame == .device {
                r.deactivateReason = .appMismatch
                r.verdictAt = now
            } else {
                credentials.invalid.append(.init(kind: kind, reason: answer.reason ?? "APP_MISMATCH"))
            }
        case .credentialsInvalid(let reason):
            r.errorCode = .credentialsInvalid
            credentials.invalid.append(.init(kind: kind, reason: reason))
        case .payloadTooLarge:
            r.errorCode = .pushPayloadTooLarge
        case .failed(let error):
            r.errorCode = error.code
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
                r.status = .retrying
                r.nextAttemptAt = at
                metrics?.retries.increment()
                return r
            case .exhausted, .expired:
                r.errorCode = decision.errorCode
            }
        }
        if r.status != .sent, r.errorDetail == nil { r.errorDetail = Self.detail(answer) }
        if let ending = r.ending { r.ledger = LedgerRule.action(for: ending, chargedAtAcceptance: device.charged) }
        return r
    }

    // MARK: - Helpers

    static func content(of n: NotificationRow) throws -> NotificationContent {
        let data = try n.data.map { try JSONParser.parseDataObject($0) }
        var content = NotificationContent(title: n.title, body: n.body, data: data, badge: n.badge, sound: n.sound,
                                          threadId: n.threadID, collapseKey: n.collapseKey,
                                          priority: n.priority)
        // The API may call push_enqueue without the CLI's checks: reserved data keys (`hk` would pass
        // for an envelope on Android), a background push with a title (R-KIND-1) and the like are
        // refused here too, as INVALID_DATA.
        do {
            try Self.applyKindFields(n.kindFields, to: &content)
            try content.validate()
        } catch let e as PushError {
            throw PushError(.invalidData, e.message)
        }
        return content
    }

    static func isFinal(_ d: BatchDeviceRow) -> Bool { d.deliveryStatus?.isFinal == true }

    /// A delivery held back by a paused scope (R-KIND-4): `retrying` at `until` (never past its
    /// expiry, `PauseRules.scheduled`), its failures unchanged, so the hold spends none of its
    /// attempts (R-SEND-12); `attempted` when it was sent (a probe, or a failure that the pause
    /// explains) and so counts as a provider attempt made.
    static func held(_ d: BatchDeviceRow, until: Date, expiresAt: Date, now: Date, attempted: Bool, encrypted: Bool) -> DeliveryRecord {
        DeliveryRecord(deviceID: d.deviceID, status: .retrying, encrypted: encrypted,
                       attempts: d.attempts + (attempted ? 1 : 0), failures: d.failures,
                       nextAttemptAt: PauseRules.scheduled(until, expiresAt: expiresAt, now: now))
    }

    /// A delivery refused before any provider call: `failed` with the error's code, and the ledger
    /// row `LedgerRule` says that ending needs given the acceptance charge.
    static func failed(_ d: BatchDeviceRow, _ e: PushError) -> DeliveryRecord {
        DeliveryRecord(deviceID: d.deviceID, status: .failed, errorCode: e.code, errorDetail: e.message,
                       attempts: d.attempts, failures: d.failures,
                       ledger: LedgerRule.action(for: .failed(e.code), chargedAtAcceptance: d.charged))
    }

    /// Operator detail for a non-success answer: status, reason and a bounded raw detail.
    static func detail(_ a: ProviderAnswer) -> String {
        var parts: [String] = [a.transport.words]
        if let s = a.httpStatus { parts.append(String(s)) }
        if let reason = a.reason { parts.append(reason) }
        if let raw = a.rawDetail { parts.append(String(raw.prefix(200))) }
        return parts.joined(separator: " ")
    }
}
