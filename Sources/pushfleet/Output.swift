import Foundation
import PushAcceptance
import PushCore
import PushStore

/// Prints results for people (text) or scripts (`--json`: one JSON document on stdout). Ids are
/// typed by their wrappers (apps, devices and notifications as `papp_`/`pdev_`/`pnot_` ids, R-API-4, by
/// `PrefixedUUID`; other UUIDs lower case, `LowercaseUUID`), never by rewriting the text; booleans and numbers are JSON
/// booleans and numbers in every command.
struct Output {
    let json: Bool

    func emit<T: Encodable>(_ value: T, text: () -> String) {
        if json {
            if let data = try? Self.encoder.encode(value) {
                FileHandle.standardOutput.write(data)
                FileHandle.standardOutput.write(Data("\n".utf8))
            }
        } else {
            print(text())
        }
    }

    /// `value` (the API's JSON of the same object, `APIBodies`) under `--json`, else `text`.
    func emit(api value: JSONValue, text: () -> String) {
        if json {
            FileHandle.standardOutput.write(Data(JSONWriter.bytes(value) + Array("\n".utf8)))
        } else {
            print(text())
        }
    }

    /// Dates as the API writes them: RFC 3339 UTC with milliseconds (`RFC3339.utcMilliseconds`).
    static var encoder: JSONEncoder {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        e.dateEncodingStrategy = .custom { date, encoder in
            var c = encoder.singleValueContainer()
            try c.encode(RFC3339.utcMilliseconds(date))
        }
        e.keyEncodingStrategy = .custom { path in SnakeKey(stringValue: Output.snakeCase(path.last?.stringValue ?? "")) }
        return e
    }

    /// A property name as the API spells it: Foundation's `convertToSnakeCase` (words at each
    /// capital, a run of capitals one word), except that a plural acronym stays one word:
    /// `userIDs` is `user_ids` (Foundation gave `user_i_ds`), `revokedUserIDs` `revoked_user_ids`.
    static func snakeCase(_ key: String) -> String {
        let c = Array(key)
        var out = ""
        var i = 0
        while i < c.count {
            let ch = c[i]
            if ch.isUppercase {
                // A run of 2+ capitals then "s" at the end or before a capital: a plural acronym.
                var j = i
                while j < c.count, c[j].isUppercase { j += 1 }
                let plural = j - i >= 2 && j < c.count && c[j] == "s" && (j + 1 == c.count || c[j + 1].isUppercase)
                if i > 0 { out += "_" }
                if plural {
                    out += String(c[i..<j]).lowercased() + "s"
                    i = j + 1
                    continue
                }
                // Without the plural: one word for the run, its last capital starting the next
                // word when a lower-case letter follows it.
                let end = j < c.count && c[j].isLowercase && j - i >= 2 ? j - 1 : j
                out += String(c[i..<end]).lowercased()
                i = end
                continue
            }
            out.append(ch)
            i += 1
        }
        return out
    }
}

/// A coding key of `Output.encoder`'s key strategy.
struct SnakeKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

/// `{"key": "value"}` for small answers whose values are all strings (ids, names).
struct KV: Encodable {
    var fields: [String: String]
    func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(fields)
    }
}

/// `pushfleet migrate --json`: the versions applied and the schema version, as numbers.
struct MigrateOutput: Encodable {
    var applied: [Int]
    var version: Int
}

/// `pushfleet stats --json`: the queue's numbers (`QueueStats`' fields, unchanged) and the provider
/// scopes paused fleet-wide (R-KIND-4), as `paused`.
struct StatsOutput: Encodable {
    var queue: QueueStats
    var paused: [PauseOutput]
    /// The last 24 hours' confirmation rate per app, mode and platform (R-IDS-4), apps with
    /// `confirm_deliveries` only.
    var confirmations: [ConfirmationRate] = []

    /// One row of `push_provider_pauses`.
    struct PauseOutput: Encodable {
        var scope: String
        var cause: String
        var detail: String
        var pausedAt: String
        /// Quota pauses: when sending resumes; outages: nil (a probe resumes them).
        var resumeAt: String?
        var nextProbeAt: String?
        var probeIntervalSeconds: Double?
        var probes: Int
        var probeInFlight: Bool

        init(_ p: ProviderPause, now: Date) {
            scope = p.scope
            cause = p.cause.rawValue
            detail = p.detail
            pausedAt = iso(p.pausedAt)
            resumeAt = p.resumeAt.map { iso($0) }
            nextProbeAt = p.cause.probes ? iso(p.nextProbeAt) : nil
            probeIntervalSeconds = p.cause.probes ? p.probeInterval : nil
            probes = p.probes
            probeInFlight = p.probeLeaseUntil.map { $0 > now } ?? false
        }
    }

    private enum Keys: String, CodingKey { case paused, confirmations, notDue }

    /// Available jobs whose time has not come: scheduled sends, retries after their backoff, and
    /// the deliveries held by a paused provider scope (R-KIND-4), which `due` does not count.
    var notDue: Int64 { max(0, queue.available - queue.due) }

    func encode(to encoder: Encoder) throws {
        try queue.encode(to: encoder)
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(notDue, forKey: .notDue)
        try c.encode(paused, forKey: .paused)
        try c.encode(confirmations, forKey: .confirmations)
    }

    /// The text form: the queue line, then one line per paused scope.
    func text(now: Date) -> String {
        var lines = ["available \(queue.available)  due \(queue.due)  not_due \(notDue)  running \(queue.running)  completed \(queue.completed)  discarded \(queue.discarded)  cancelled \(queue.cancelled)  oldest_due_age \(String(format: "%.3f", queue.oldestDueAgeSeconds))s"]
        for p in paused {
            var line = "paused \(p.scope)  cause \(p.cause)  since \(p.pausedAt)  probes \(p.probes)"
            if let end = p.resumeAt { line += "  resumes \(end)" }
            if let next = p.nextProbeAt { line += p.probeInFlight ? "  probe in flight" : "  next probe \(next)" }
            if !p.detail.isEmpty { line += "  (\(p.detail))" }
            lines.append(line)
        }
        if !paused.isEmpty {
            // Held deliveries are rescheduled to the next probe (or the quota pause's end): not due,
            // so "due 0" while they wait would read as an idle queue.
            lines.append("held: deliveries to the paused scopes wait among the \(notDue) jobs not yet due, until the next probe or the pause's end")
        }
        for c in confirmations {
            let rate = c.sent > 0 ? String(format: "%.1f%%", 100 * Double(c.confirmed) / Double(c.sent)) : "-"
            lines.append("confirmed \(PrefixedID.format(.app, c.appID))  \(c.mode)  \(c.platform)  \(c.confirmed)/\(c.sent) = \(rate)  (24 h)")
        }
        return lines.joined(separator: "\n")
    }
}

/// `pushfleet jobs retry --json`.
struct RetryOutput: Encodable {
    var retried: Int64
}

/// `pushfleet apps credentials rotate-key --json`.
struct ResealOutput: Encodable {
    var resealed: Int
    /// Webhook endpoints whose signing secrets were re-sealed too.
    var webhookEndpointsResealed: Int
}

/// `pushfleet send --json`: `created` is a boolean (true: a new notification; false: a replay of
/// the idempotency key answered with the first one, `replayed` true).
struct SendOutput: Encodable {
    @PrefixedUUID<NotificationIDKind> var notificationID: UUID
    var created: Bool
    var replayed: Bool
    /// The SMS fallback's segment count and encoding (R-SMS-1), when it has one.
    var smsSegments: Int?
    var smsEncoding: String?
}

/// `pushfleet devices register --json`: the device as stored, and what the registration did.
struct RegisterOutput: Encodable {
    @PrefixedUUID<DeviceIDKind> var deviceID: UUID
    var created: Bool
    var reactivated: Bool
    @PrefixedUUIDs<DeviceIDKind> var evicted: [UUID]
    var device: StoredDevice
    /// The device's new preview token, when this registration made one (issue 24): shown once.
    var previewToken: String?

    init(_ r: DeviceRegistrationResult) {
        deviceID = r.device.id
        created = r.created
        reactivated = r.reactivated
        evicted = r.evicted
        device = r.device
        previewToken = r.previewToken
    }
}

func iso(_ d: Date?) -> String {
    guard let d else { return "-" }
    let f = ISO8601DateFormatter()
    f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    return f.string(from: d)
}
