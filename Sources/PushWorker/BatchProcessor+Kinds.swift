import PushCore
import PushStore

extension BatchProcessor {
    /// Puts a row's kind columns (sql/0011) into `content` as PushCore's values: the push type
    /// (R-KIND-1), the iOS presentation fields (R-KIND-2), the loc keys and args (R-KIND-3, the args
    /// read from their JSON array text) and the Android channel. The combinations are then
    /// `content.validate()`'s.
    /// - Throws: `PushError` `.validationError` for a value no acceptance would have let through (the
    ///   caller reports it as `INVALID_DATA`).
    static func applyKindFields(_ f: NotificationKindFields, to content: inout NotificationContent) throws {
        guard let pushType = PushType(rawValue: f.pushType) else {
            throw PushError(.validationError, "push_type: not alert or background", field: "push_type")
        }
        content.pushType = pushType
        var p = IOSPresentation(category: f.category, targetContentId: f.targetContentID)
        if let text = f.interruptionLevel {
            guard let level = IOSPresentation.InterruptionLevel(rawValue: text) else {
                throw PushError(.validationError, "interruption_level: not a known level", field: "interruption_level")
            }
            p.interruptionLevel = level
        }
        p.relevanceScore = try f.relevanceScore.map { try fraction($0, "relevance_score") }
        if let name = f.criticalSoundName {
            p.criticalSound = .init(name: name, volume: try f.criticalSoundVolume.map { try fraction($0, "critical_sound.volume") })
        }
        content.presentation = p
        content.localization = LocalizedText(titleLocKey: f.titleLocKey, titleLocArgs: try f.titleLocArgsJSON.map { try strings($0, "title_loc_args") },
                                             bodyLocKey: f.bodyLocKey, bodyLocArgs: try f.bodyLocArgsJSON.map { try strings($0, "body_loc_args") })
        content.channelId = f.channelID
    }

    private static func fraction(_ value: Double, _ field: String) throws -> UnitFraction {
        guard let f = UnitFraction(value) else {
            throw PushError(.validationError, "\(field): not a number from 0 to 1 with at most 4 decimal places", field: field)
        }
        return f
    }

    /// A JSON array of strings (`array_to_json` of a `text[]`); a null element is refused.
    private static func strings(_ json: String, _ field: String) throws -> [String] {
        guard case .array(let items) = try JSONParser.parse(json) else {
            throw PushError(.validationError, "\(field): not an array", field: field)
        }
        return try items.map { item in
            guard case .string(let s) = item else { throw PushError(.validationError, "\(field): an element is not a string", field: field) }
            return s
        }
    }
}
