import PushCore

// `APNsEnvironment` (which host a token belongs to, Apple's "Sending notification requests to APNs")
// and `Priority` (R-SEND-10) are PushCore's types.

/// One push to send, already planned and sealed by the worker. Payload bytes are final: the
/// provider client sends them unchanged.
public struct ProviderRequest: Sendable, Equatable {
    /// The delivery row this push belongs to (for the caller's bookkeeping; never sent).
    public var deliveryId: Int64
    /// Device address: APNs hex device token, FCM registration token, or the Web Push subscription
    /// endpoint URL (`WebPushClient`).
    public var deviceToken: String
    /// APNs only: which host the token belongs to; ignored by FCM.
    public var apnsEnvironment: APNsEnvironment
    /// Request body: the APNs JSON payload, or the full FCM v1 body `{"message":{...}}` built by PushCore.
    public var payload: [UInt8]
    /// The notification's priority (R-SEND-10): with `pushType`, APNs `apns-priority` and Web Push
    /// `Urgency` (FCM carries its priority inside `payload`).
    public var priority: Priority
    /// Alert or background (R-KIND-1): APNs `apns-push-type`, and `apns-priority` 5 / `Urgency: low`
    /// for a background push (`PushType`).
    public var pushType: PushType
    /// APNs `apns-expiration`: UNIX seconds after which the provider may drop it; 0 = now or never.
    public var expirationUnixSeconds: Int64
    /// APNs `apns-collapse-id` (≤ 64 bytes, R-SEND-13); for Web Push the collapse key, sent as
    /// `Topic` (`WebPushTopic`); nil = header omitted.
    public var collapseId: String?
    /// APNs `apns-id`: lower-case UUID, stable across the delivery's attempts (DESIGN guarantees).
    public var apnsId: String
    /// FCM time to live in seconds (R-SEND-10); PushCore writes it into `payload` as `android.ttl`,
    /// carried here for logging and for providers that take it as a header.
    public var ttlSeconds: Int64

    /// Memberwise initializer.
    public init(deliveryId: Int64, deviceToken: String, apnsEnvironment: APNsEnvironment = .production,
                payload: [UInt8], priority: Priority = .high, pushType: PushType = .alert, expirationUnixSeconds: Int64 = 0,
                collapseId: String? = nil, apnsId: String, ttlSeconds: Int64 = 0) {
        self.deliveryId = deliveryId
        self.deviceToken = deviceToken
        self.apnsEnvironment = apnsEnvironment
        self.payload = payload
        self.priority = priority
        self.pushType = pushType
        self.expirationUnixSeconds = expirationUnixSeconds
        self.collapseId = collapseId
        self.apnsId = apnsId
        self.ttlSeconds = ttlSeconds
    }
}

/// A push provider client as the worker sees it (DESIGN "send" step). Implementations: `APNsClient`,
/// `FCMClient`, `WebPushClient`. Calls block the calling thread; run them on a worker thread, not the cooperative pool.
public protocol PushProvider: AnyObject, Sendable {
    /// Sends every request of `batch` (concurrently where the transport allows) and returns one raw
    /// answer per request, in the same order. Never throws: transport problems are answers too
    /// (`ProviderAnswer.Transport`), interpreted by PushCore's answer table.
    func send(_ batch: [ProviderRequest]) -> [ProviderAnswer]
    /// The scopes a pause of which holds `request` back (R-KIND-4, `PauseScope`): the host it goes
    /// to, and for FCM its project. Empty: never paused.
    func pauseScopes(for request: ProviderRequest) -> [String]
}

extension PushProvider {
    /// No scopes: the client's pushes are never paused.
    public func pauseScopes(for request: ProviderRequest) -> [String] { [] }
}
