/// A device's platform (R-DEV-1); the raw value is the stored spelling.
public enum Platform: String, Sendable, Hashable, CaseIterable, Codable {
    /// Apple device reached through APNs.
    case ios
    /// Android device reached through FCM HTTP v1.
    case android
    /// Browser subscription reached through Web Push (RFC 8030/8291); always encrypted (R-SEND-11).
    case web
}

/// Test or live (R-MODE-1, R-MODE-2): a mode of a device and of a notification, never of an app.
public enum Mode: String, Sendable, Hashable, CaseIterable, Codable {
    /// Answered by the built-in simulator; never billed, never touches credential state.
    case test
    /// Sent to the real providers.
    case live
}

/// APNs environment of an iOS token (R-DEV-1; Apple's "Sending notification requests to APNs": a token
/// works on one host).
public enum APNsEnvironment: String, Sendable, Hashable, CaseIterable, Codable {
    /// `api.sandbox.push.apple.com` (builds run from Xcode).
    case sandbox
    /// `api.push.apple.com` (App Store, TestFlight, ad hoc).
    case production
}
