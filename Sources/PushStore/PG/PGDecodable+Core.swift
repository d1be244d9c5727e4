import PushCore

/// PushCore's stored vocabularies read straight from their column: a spelling this release does
/// not know is not a valid value (`DB_DECODE`), so it fails that row's read (a claimed row fails
/// its job, `UNDECODABLE_ROW`) instead of turning into a default.
extension PGDecodable where Self: RawRepresentable, Self.RawValue == String {
    /// The case whose raw value is the text, or nil.
    public init?(pgText: String) { self.init(rawValue: pgText) }
}

extension JobKind: PGDecodable {}
extension JobState: PGDecodable {}
extension NotificationState: PGDecodable {}
extension DeliveryStatus: PGDecodable {}
extension Mode: PGDecodable {}
extension Priority: PGDecodable {}
extension APNsEnvironment: PGDecodable {}
extension ContentMode: PGDecodable {}
