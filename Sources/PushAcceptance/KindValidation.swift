import PushCore

/// The bounds of a send request's kind fields (R-KIND-1..3, R-LIM-1), pure, in request order:
/// `push_type`, `interruption_level`, `relevance_score`, `category`, `target_content_id`,
/// `critical_sound`, the clear texts together, `title_loc_key`, `title_loc_args`, `body_loc_key`,
/// `body_loc_args`, `channel_id`. Each refusal is `VALIDATION_ERROR` naming its field; the
/// combinations (a background push with a title, loc args without a key, critical without its sound)
/// are PushCore's `NotificationContent.validate()`, run next. sql/0011's `push_check_kind_fields`
/// holds the same numbers.
enum KindValidation {
    typealias Limits = AcceptanceLimits

    /// The kind fields as PushCore's values.
    struct Kind {
        var pushType: PushType
        var presentation: IOSPresentation
        var localization: LocalizedText
    }

    static func validate(_ r: SendRequest) throws -> Kind {
        var pushType = PushType.alert
        if let text = r.pushType {
            guard let t = PushType(rawValue: text) else { throw AcceptanceError.invalid("push_type", "must be alert or background") }
            pushType = t
        }
        var p = IOSPresentation()
        if let text = r.interruptionLevel {
            guard let level = IOSPresentation.InterruptionLevel(rawValue: text) else {
                throw AcceptanceError.invalid("interruption_level", "must be passive, active, time-sensitive or critical")
            }
            p.interruptionLevel = level
        }
        p.relevanceScore = try r.relevanceScore.map { try fraction($0, "relevance_score") }
        try text(r.category, "category", max: Limits.maxCategoryBytes, escaped: true)
        p.category = r.category
        try text(r.targetContentID, "target_content_id", max: Limits.maxTargetContentIDBytes, escaped: true)
        p.targetContentId = r.targetContentID
        if let sound = r.criticalSound {
            guard let name = sound.name else {
                throw AcceptanceError.invalid("critical_sound.name", "is required with critical_sound")
            }
            try text(name, "critical_sound.name", max: Limits.maxCriticalSoundNameBytes, escaped: true)
            p.criticalSound = .init(name: name, volume: try sound.volume.map { try fraction($0, "critical_sound.volume") })
        }
        let clear = [r.sound, r.threadID, r.category, r.targetContentID, r.criticalSound?.name]
            .reduce(0) { $0 + ($1.map(Limits.jsonTextBytes) ?? 0) }
        if clear > Limits.maxClearTextBytes {
            // The last of them in request order (sound and thread_id alone always fit), as sql/0011 names it.
            let field = r.criticalSound != nil ? "critical_sound.name" : r.targetContentID != nil ? "target_content_id" : "category"
            throw AcceptanceError.invalid(field, "sound (or critical_sound.name), thread_id, category and target_content_id together at most \(Limits.maxClearTextBytes) bytes (UTF-8, as escaped in the JSON payload)")
        }
        var loc = LocalizedText()
        loc.titleLocKey = try text(r.titleLocKey, "title_loc_key", max: Limits.maxLocKeyBytes, escaped: false)
        loc.titleLocArgs = try locArgs(r.titleLocArgs, "title_loc_args")
        loc.bodyLocKey = try text(r.bodyLocKey, "body_loc_key", max: Limits.maxLocKeyBytes, escaped: false)
        loc.bodyLocArgs = try locArgs(r.bodyLocArgs, "body_loc_args")
        try text(r.channelID, "channel_id", max: Limits.maxChannelIDBytes, escaped: false)
        return Kind(pushType: pushType, presentation: p, localization: loc)
    }

    /// A number from 0 to 1 with at most four decimal places.
    static func fraction(_ value: Double, _ field: String) throws -> UnitFraction {
        guard let f = UnitFraction(value) else {
            throw AcceptanceError.invalid(field, "must be a number from 0 to 1 with at most \(Limits.maxFractionDecimals) decimal places")
        }
        return f
    }

    /// A text of 1 to `max` bytes without NUL, counted as escaped in JSON when `escaped` (a text in
    /// clear in `aps`), else in UTF-8; nil passes. Returns `text`.
    @discardableResult
    static func text(_ text: String?, _ field: String, max: Int, escaped: Bool) throws -> String? {
        guard let text else { return nil }
        let n = escaped ? Limits.jsonTextBytes(text) : text.utf8.count
        guard n >= 1, n <= max, !text.utf8.contains(0) else {
            let unit = escaped ? " (UTF-8, as escaped in the JSON payload)" : ""
            throw AcceptanceError.invalid(field, "must be 1 to \(max) bytes\(unit), without NUL")
        }
        return text
    }

    /// At most 16 strings of at most 1,024 bytes, without NUL; an empty array is no array.
    static func locArgs(_ args: [String]?, _ field: String) throws -> [String]? {
        guard let args, !args.isEmpty else { return nil }
        guard args.count <= Limits.maxLocArgs else {
            throw AcceptanceError.invalid(field, "at most \(Limits.maxLocArgs) strings")
        }
        if let i = args.firstIndex(where: { $0.utf8.count > Limits.maxLocArgBytes || $0.utf8.contains(0) }) {
            throw AcceptanceError.invalid(field, "element \(i + 1) of \(args.count) is not a string of at most \(Limits.maxLocArgBytes) bytes without NUL")
        }
        return args
    }
}
