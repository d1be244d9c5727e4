import struct Foundation.UUID

/// What an app's iOS and Android pushes carry (R-IDS-1, product decision of issue 24): the
/// notification's content sealed per device (`sealed`, the HPKE envelope of R-ENC-1..8, the
/// default), or only a fixed marker with the notification id (`ids_only`), the app then fetching
/// the content itself with its preview token.
///
/// Read from the app at the notification's send time and written on the notification
/// (`push_notifications.content_mode`), as R-SEND-2 does for `encrypted`; every batch and retry
/// reads it from there. Web devices keep RFC 8291 with the full content in either mode (R-SEND-11).
public enum ContentMode: String, Sendable, Hashable, CaseIterable, Codable {
    /// The content sealed per device with HPKE, or in plaintext for a keyless device of an app not
    /// requiring encryption (R-SEND-3..5).
    case sealed
    /// Only the `IDsOnlyMarker`, the placeholder, badge and sound (iOS): nothing of the content.
    case idsOnly = "ids_only"

    /// The spelling a stored or requested value may take, else nil.
    public init?(text: String) { self.init(rawValue: text) }
}

/// The fixed marker of an `ids_only` push (R-IDS-1): `{"v":1,"id":"pnot_<32 hex>"}`, compact, in
/// that key order. APNs carries it as the object `pf` beside `aps`; FCM as the string `data.pf`
/// (FCM data values are strings, as `data.hk` is for the envelope, R-ENC-5). `v` is the marker's
/// format version; `id` the notification's prefixed id (R-API-4), what the app fetches the content
/// by. Nothing else of the notification is in it.
public enum IDsOnlyMarker {
    /// The marker's format version, the JSON number `1`.
    public static let version = 1
    /// The member name beside `aps` (APNs) and the `data` key (FCM).
    public static let key = "pf"

    /// The marker's compact JSON for notification `id`, always 52 bytes:
    /// `{"v":1,"id":"` + `pnot_` and 32 hex digits + `"}`.
    public static func json(notificationID id: UUID) -> [UInt8] {
        var out = Array(#"{"v":1,"id":""#.utf8)
        out.append(contentsOf: PrefixedID.format(.notification, id).utf8)
        out.append(contentsOf: #""}"#.utf8)
        return out
    }
}
