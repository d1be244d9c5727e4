/// The iOS presentation fields of a notification (R-KIND-2), as Apple's "Generating a remote
/// notification" names them in `aps`: `interruption-level`, `relevance-score`, `category`,
/// `target-content-id`, and the critical-alert `sound` dictionary.
///
/// iOS reads them before the app's Notification Service Extension runs, so they travel in clear in
/// `aps` for encrypted deliveries too, like badge, sound and thread id (they are not content and are
/// not sealed). Android and Web devices ignore them (one notification may target all three).
public struct IOSPresentation: Sendable, Hashable {
    /// `interruption-level`: how the system presents the notification.
    public enum InterruptionLevel: String, Sendable, Hashable, CaseIterable, Codable {
        /// Added to the notification list without lighting the screen or playing a sound.
        case passive
        /// Presented immediately (iOS's default).
        case active
        /// Presented immediately, through Focus and scheduled summaries.
        case timeSensitive = "time-sensitive"
        /// Presented immediately, bypassing the mute switch: needs Apple's critical-alert
        /// entitlement and a `criticalSound` (the `sound` dictionary with `critical` = 1).
        case critical
    }

    /// The critical-alert sound: `aps.sound` = `{"critical":1,"name":…[,"volume":…]}` in place of the
    /// sound name (Apple's "Generating a remote notification", key `sound`).
    public struct CriticalSound: Sendable, Hashable {
        /// The sound file name in the app bundle (or `default`).
        public var name: String
        /// Volume from 0 (silent) to 1 (full); nil leaves `volume` out (iOS plays it at full volume).
        public var volume: UnitFraction?

        /// Makes a critical sound.
        public init(name: String, volume: UnitFraction? = nil) {
            self.name = name
            self.volume = volume
        }
    }

    /// `interruption-level`.
    public var interruptionLevel: InterruptionLevel?
    /// `relevance-score`, 0 to 1: how the system ranks the notification in the summary.
    public var relevanceScore: UnitFraction?
    /// `category`: a category identifier the app registered (its actions).
    public var category: String?
    /// `target-content-id`: the window or content to bring forward.
    public var targetContentId: String?
    /// The critical-alert sound dictionary; only with `interruptionLevel` `.critical`.
    public var criticalSound: CriticalSound?

    /// Makes presentation fields; all absent by default.
    public init(interruptionLevel: InterruptionLevel? = nil, relevanceScore: UnitFraction? = nil, category: String? = nil,
                targetContentId: String? = nil, criticalSound: CriticalSound? = nil) {
        self.interruptionLevel = interruptionLevel
        self.relevanceScore = relevanceScore
        self.category = category
        self.targetContentId = targetContentId
        self.criticalSound = criticalSound
    }

    /// True when no field is set.
    public var isEmpty: Bool {
        interruptionLevel == nil && relevanceScore == nil && category == nil && targetContentId == nil && criticalSound == nil
    }
}

/// A number from 0 to 1 with at most four decimal places (`relevance-score`, a critical sound's
/// `volume`), held exactly as ten-thousandths so its JSON text is one fixed spelling: `0`, `1`,
/// `0.75`, `0.0001` (no exponent, no trailing zero); at most 6 bytes (R-LIM-1).
public struct UnitFraction: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The value times 10,000, from 0 to 10,000.
    public let tenThousandths: Int

    /// Ten-thousandths from 0 to 10,000, else nil.
    public init?(tenThousandths: Int) {
        guard (0...10_000).contains(tenThousandths) else { return nil }
        self.tenThousandths = tenThousandths
    }

    /// `value` when it is from 0 to 1 and is exactly the double nearest a decimal of at most four
    /// places (`k / 10_000`, the double a decimal text of that value reads as), else nil: `1e-11`
    /// is not 0, and `0.00005` is not 0.0001.
    public init?(_ value: Double) {
        guard value.isFinite, value >= 0, value <= 1 else { return nil }
        let rounded = (value * 10_000).rounded()
        guard value == rounded / 10_000 else { return nil }
        self.init(tenThousandths: Int(rounded))
    }

    /// The value as a double.
    public var value: Double { Double(tenThousandths) / 10_000 }

    /// The JSON number text (`0`, `1`, `0.75`, `0.0001`).
    public var description: String {
        if tenThousandths == 10_000 { return "1" }
        if tenThousandths == 0 { return "0" }
        var fraction = String(tenThousandths)
        fraction = String(repeating: "0", count: 4 - fraction.count) + fraction
        while fraction.hasSuffix("0") { fraction.removeLast() }
        return "0." + fraction
    }

    /// Orders by value.
    public static func < (a: UnitFraction, b: UnitFraction) -> Bool { a.tenThousandths < b.tenThousandths }
}

/// A notification's own localized texts (R-KIND-3): keys into the app's strings (iOS
/// `Localizable.strings`, Android string resources) and their format arguments. They are content:
/// in clear for plaintext deliveries (APNs `aps.alert` `title-loc-key`, `title-loc-args`, `loc-key`,
/// `loc-args`; FCM `android.notification` `title_loc_key`, `title_loc_args`, `body_loc_key`,
/// `body_loc_args`), sealed after R-ENC-3's six fields for encrypted ones.
public struct LocalizedText: Sendable, Hashable {
    /// Key of the localized title.
    public var titleLocKey: String?
    /// Arguments of the localized title (only with `titleLocKey`).
    public var titleLocArgs: [String]?
    /// Key of the localized body.
    public var bodyLocKey: String?
    /// Arguments of the localized body (only with `bodyLocKey`).
    public var bodyLocArgs: [String]?

    /// Makes localized texts; all absent by default.
    public init(titleLocKey: String? = nil, titleLocArgs: [String]? = nil, bodyLocKey: String? = nil,
                bodyLocArgs: [String]? = nil) {
        self.titleLocKey = titleLocKey
        self.titleLocArgs = titleLocArgs
        self.bodyLocKey = bodyLocKey
        self.bodyLocArgs = bodyLocArgs
    }

    /// True when no field is set.
    public var isEmpty: Bool { titleLocKey == nil && titleLocArgs == nil && bodyLocKey == nil && bodyLocArgs == nil }

    /// UTF-8 bytes of the keys and every argument (their part of FCM's R-SEND-7 measure).
    public var textBytes: Int {
        (titleLocKey?.utf8.count ?? 0) + (bodyLocKey?.utf8.count ?? 0)
            + (titleLocArgs ?? []).reduce(0) { $0 + $1.utf8.count } + (bodyLocArgs ?? []).reduce(0) { $0 + $1.utf8.count }
    }
}
