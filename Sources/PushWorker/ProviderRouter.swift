import Foundation
import PushCore
import PushProviders

/// One delivery ready for a provider: the final bytes and the request metadata (R-SEND-10,
/// R-SEND-13, R-ENC-6).
public struct OutboundPush: Sendable {
    public var deviceID: UUID
    public var platform: Platform
    /// APNs or FCM token; for web devices the subscription endpoint.
    public var token: String
    public var apnsEnvironment: APNsEnvironment?
    /// The request body exactly as sent (APNs JSON, FCM request JSON, Web Push aes128gcm body).
    public var body: [UInt8]
    public var priority: Priority
    /// Alert or background (R-KIND-1).
    public var pushType: PushType = .alert
    /// `apns-expiration` (UNIX seconds, 0 = now or never).
    public var apnsExpiration: Int64
    /// Seconds left (FCM `ttl`, Web Push `TTL`).
    public var secondsLeft: Int
    public var collapseKey: String?
    /// Stable per delivery across retries (APNs `apns-id`).
    public var apnsID: UUID
    /// Provider attempts already made for this delivery.
    public var previousAttempts: Int
}

/// The credential sets of an app as the worker needs them at send time (R-APP-3, R-APP-4).
public struct CredentialStates: Sendable, Equatable {
    /// Platforms whose set is `invalid`, or missing in live mode.
    public var unusable: Set<Platform>
    /// Platforms whose set already had a live notification accepted (R-PRV-2 blame).
    public var verified: Set<Platform>

    public init(unusable: Set<Platform> = [], verified: Set<Platform> = []) {
        self.unusable = unusable
        self.verified = verified
    }
}

/// Routes a batch's pushes to the provider that serves them: the simulator in test mode
/// (R-MODE-2), APNs / FCM / Web Push in live mode.
public protocol ProviderRouter: AnyObject {
    /// Credential states for `appID` (live mode only; test mode never reads them, R-APP-3).
    func credentialStates(appID: UUID) throws -> CredentialStates
    /// Sends every push (blocking; multiplexed where the provider allows) and answers in the same
    /// order, each with the provider that answered.
    func send(appID: UUID, mode: Mode, pushes: [OutboundPush]) -> [(ProviderKind, ProviderAnswer)]
    /// The pause scopes of each push, in order (R-KIND-4, `PushProvider.pauseScopes`): the
    /// provider host it would go to, and for FCM its project. Empty for a push never paused (test
    /// mode, no client).
    func pauseScopes(appID: UUID, mode: Mode, pushes: [OutboundPush]) -> [[String]]
}

extension ProviderRouter {
    /// No scopes: nothing this router sends is ever paused.
    public func pauseScopes(appID: UUID, mode: Mode, pushes: [OutboundPush]) -> [[String]] { pushes.map { _ in [] } }
}

/// The router for a fleet without live providers configured: test mode goes to the simulator;
/// live deliveries are refused as `CREDENTIALS_INVALID` (no usable credential set) before any call.
public final class SimulatorOnlyRouter: ProviderRouter {
    public init() {}

    public func credentialStates(appID: UUID) throws -> CredentialStates {
        CredentialStates(unusable: ProviderTable.standard.platforms, verified: [])
    }

    public func send(appID: UUID, mode: Mode, pushes: [OutboundPush]) -> [(ProviderKind, ProviderAnswer)] {
        pushes.map { Self.simulate($0) }
    }

    /// The simulator's answer for one push (a device addressed by an endpoint URL, which a token
    /// never is, answers by the endpoint's last path segment).
    public static func simulate(_ p: OutboundPush) -> (ProviderKind, ProviderAnswer) {
        let token = p.token.containsUTF8Byte(UInt8(ascii: "/")) ? String(p.token.split(separator: "/").last ?? "") : p.token
        return (.simulator, Simulator.answer(token: token, previousAttempts: p.previousAttempts,
                                             messageID: p.apnsID.uuidString.lowercased()))
    }
}
