import Foundation

/// A notification's kind columns (sql/0011, R-KIND-1..3) as the worker reads them; PushCore builds
/// and checks the content from them (`BatchProcessor.content`), so a row written past
/// `push_enqueue` with a value out of its bounds fails that notification as `INVALID_DATA`.
public struct NotificationKindFields: Sendable, Equatable {
    /// `alert` or `background` (R-KIND-1).
    public var pushType: String
    /// `passive`, `active`, `time-sensitive`, `critical` (R-KIND-2).
    public var interruptionLevel: String?
    /// 0 to 1 (R-KIND-2).
    public var relevanceScore: Double?
    public var category: String?
    public var targetContentID: String?
    /// The critical-alert sound's name and volume.
    public var criticalSoundName: String?
    public var criticalSoundVolume: Double?
    /// The notification's own loc keys and args (R-KIND-3); the args as the JSON array text of
    /// their `text[]` (`array_to_json`: `["a","b"]`).
    public var titleLocKey: String?
    public var titleLocArgsJSON: String?
    public var bodyLocKey: String?
    public var bodyLocArgsJSON: String?
    /// `android.notification.channel_id`.
    public var channelID: String?

    /// An alert without any kind field (what a row of an earlier release reads as).
    public init(pushType: String = "alert", interruptionLevel: String? = nil, relevanceScore: Double? = nil,
                category: String? = nil, targetContentID: String? = nil, criticalSoundName: String? = nil,
                criticalSoundVolume: Double? = nil, titleLocKey: String? = nil, titleLocArgsJSON: String? = nil,
                bodyLocKey: String? = nil, bodyLocArgsJSON: String? = nil, channelID: String? = nil) {
        self.pushType = pushType
        self.interruptionLevel = interruptionLevel
        self.relevanceScore = relevanceScore
        self.category = category
        self.targetContentID = targetContentID
        self.criticalSoundName = criticalSoundName
        self.criticalSoundVolume = criticalSoundVolume
        self.titleLocKey = titleLocKey
        self.titleLocArgsJSON = titleLocArgsJSON
        self.bodyLocKey = bodyLocKey
        self.bodyLocArgsJSON = bodyLocArgsJSON
        self.channelID = channelID
    }
}

/// The claim's kind columns (`JobQueries.claimKindColumns`), positions looked up once per result.
struct KindColumns {
    let pushType, interruptionLevel, relevanceScore, category, targetContentID, criticalSoundName,
        criticalSoundVolume, titleLocKey, titleLocArgs, bodyLocKey, bodyLocArgs, channelID,
        placeholderTitleLocKey, placeholderBodyLocKey: Int

    init(_ r: PGResult) throws {
        pushType = try r.columnIndex(named: "push_type")
        interruptionLevel = try r.columnIndex(named: "interruption_level")
        relevanceScore = try r.columnIndex(named: "relevance_score")
        category = try r.columnIndex(named: "category")
        targetContentID = try r.columnIndex(named: "target_content_id")
        criticalSoundName = try r.columnIndex(named: "critical_sound_name")
        criticalSoundVolume = try r.columnIndex(named: "critical_sound_volume")
        titleLocKey = try r.columnIndex(named: "title_loc_key")
        titleLocArgs = try r.columnIndex(named: "title_loc_args")
        bodyLocKey = try r.columnIndex(named: "body_loc_key")
        bodyLocArgs = try r.columnIndex(named: "body_loc_args")
        channelID = try r.columnIndex(named: "channel_id")
        placeholderTitleLocKey = try r.columnIndex(named: "placeholder_title_loc_key")
        placeholderBodyLocKey = try r.columnIndex(named: "placeholder_body_loc_key")
    }

    /// The notification's kind fields in row `i`.
    func fields(_ r: PGResult, _ i: Int) throws -> NotificationKindFields {
        NotificationKindFields(
            pushType: try r.string(i, pushType), interruptionLevel: try r.decode(i, interruptionLevel),
            relevanceScore: try r.decode(i, relevanceScore), category: try r.decode(i, category),
            targetContentID: try r.decode(i, targetContentID), criticalSoundName: try r.decode(i, criticalSoundName),
            criticalSoundVolume: try r.decode(i, criticalSoundVolume), titleLocKey: try r.decode(i, titleLocKey),
            titleLocArgsJSON: try r.decode(i, titleLocArgs), bodyLocKey: try r.decode(i, bodyLocKey),
            bodyLocArgsJSON: try r.decode(i, bodyLocArgs), channelID: try r.decode(i, channelID))
    }
}
