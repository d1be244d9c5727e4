import Foundation

/// What an API server expects of OAuth access tokens (issue 15 part 1, R-API-2): the issuer, the
/// audience, the clock skew allowed. Pure value.
public struct AccessTokenSettings: Sendable, Equatable {
    /// The authorization server's issuer identifier: the token's `iss` must equal it exactly.
    public var issuer: String
    /// This API's identifier: the token's `aud` (a string or an array) must contain it.
    public var audience: String
    /// Seconds of clock skew allowed on `exp`, `nbf` and `iat` (default 30).
    public var leewaySeconds: Double

    /// Makes settings.
    public init(issuer: String, audience: String, leewaySeconds: Double = 30) {
        self.issuer = issuer
        self.audience = audience
        self.leewaySeconds = leewaySeconds
    }
}

/// The claims of a verified access token that the API acts on.
public struct AccessTokenClaims: Sendable, Equatable {
    /// `sub`: who the token was issued to (the audit log's "who", `oauth:` + it).
    public var subject: String
    /// `pushfleet_account`: the account the token acts for (R-API-1).
    public var accountID: UUID
    /// `pushfleet_mode`: `test` or `live`, the request's mode (R-MODE-1).
    public var mode: Mode
    /// The permissions its `scope` grants (R-API-2).
    public var permissions: APIPermissions
    /// `pushfleet_apps`: the apps it is limited to, nil for every app of the account.
    public var appIDs: [UUID]?
    /// `exp`.
    public var expiresAt: Date
}

/// Why a token is refused: every refusal is a 401 `UNAUTHORIZED` (RFC 6750 §3.1 `invalid_token`);
/// `reason` is a stable label for logs and tests, `message` says what to fix, never the token.
public struct AccessTokenRefusal: Error, Equatable, Sendable {
    /// `malformed`, `algorithm`, `type`, `unknown_key`, `signature`, `issuer`, `audience`,
    /// `expired`, `not_yet_valid`, `claims`, `keys_unavailable`, `unknown_account` (the API, once verified).
    public var reason: String
    /// Human explanation.
    public var message: String

    /// Makes a refusal.
    public init(_ reason: String, _ message: String) {
        self.reason = reason
        self.message = message
    }
}

/// The rules of RFC 9068 (JWT profile for OAuth 2.0 access tokens) this API applies, pure: the
/// header's `typ` and `alg`, the registered claims (`iss`, `aud`, `exp`, `nbf`, `iat`, `sub`), the
/// account and mode claims, and the scope-to-permission table of R-API-2. The signature is checked
/// by the caller (`AccessTokenVerifier`, with the JWKS key the header names).
public enum AccessTokenRules {
    /// The algorithms accepted: RS256 (RFC 7518 §3.3) and ES256 (§3.4). `none` and the HMAC ones
    /// are refused by name before any key is looked at (RFC 8725 §3.1).
    public static let algorithms: Set<String> = ["RS256", "ES256"]

    /// The account claim (a `pacc_` id).
    public static let accountClaim = "pushfleet_account"
    /// The mode claim (`test` or `live`).
    public static let modeClaim = "pushfleet_mode"
    /// The optional apps claim (an array of `papp_` ids).
    public static let appsClaim = "pushfleet_apps"

    /// What each scope grants (R-API-2): `push:devices` registers and removes devices;
    /// `push:send` sends and cancels, reads notifications and lists devices, and does not
    /// register; `push:apps` reads and changes apps (usage and audit too); `push:webhooks` the
    /// webhook endpoints. Other scopes in the token are ignored.
    public static let scopes: [String: [APIPermissions.Grant]] = [
        "push:devices": [.init(.pushDevices, .write), .init(.pushDevices, .delete)],
        "push:send": [.init(.push, .write), .init(.push, .read)],
        "push:apps": [.init(.pushApps, .read), .init(.pushApps, .write)],
        "push:webhooks": [.init(.webhooks, .read), .init(.webhooks, .write)],
    ]

    /// The scope that grants `grant`, for a refusal's message (`push:send` for `push` w).
    public static func scope(granting grant: APIPermissions.Grant) -> String? {
        scopes.first { $0.value.contains(grant) }?.key
    }

    /// The permissions of a space-separated `scope` value (RFC 8693 §4.2, RFC 9068 §2.2.3).
    public static func permissions(scope: String) -> APIPermissions {
        var grants = Set<APIPermissions.Grant>()
        for s in scope.split(separator: " ") { grants.formUnion(scopes[String(s)] ?? []) }
        return APIPermissions(grants)
    }

    /// Checks the protected header; returns its `alg` and `kid`.
    /// - Throws: `AccessTokenRefusal` `algorithm` for any `alg` but RS256 and ES256 (`none`,
    ///   HS256, ...), `type` unless `typ` is `at+jwt` (RFC 9068 §4, case-insensitive, with or
    ///   without `application/`), `malformed` for a `crit` member (no extension is understood) or a
    ///   header that is not an object.
    public static func header(_ value: JSONValue) throws -> (algorithm: String, keyID: String?) {
        guard case .object(let h) = value else { throw AccessTokenRefusal("malformed", "the token header is not a JSON object") }
        guard case .string(let alg)? = h["alg"], algorithms.contains(alg) else {
            throw AccessTokenRefusal("algorithm", "the token's alg must be RS256 or ES256")
        }
        guard case .string(let typ)? = h["typ"],
              ["at+jwt", "application/at+jwt"].contains(typ.lowercased()) else {
            throw AccessTokenRefusal("type", "the token's typ must be at+jwt (RFC 9068)")
        }
        if h["crit"] != nil { throw AccessTokenRefusal("malformed", "the token's crit extensions are not understood") }
        var kid: String?
        switch h["kid"] {
        case nil: kid = nil
        case .string(let k)?: kid = k
        default: throw AccessTokenRefusal("malformed", "the token's kid must be a string")
        }
        return (alg, kid)
    }

    /// Checks the claims against `settings` at `now`.
    /// - Throws: `AccessTokenRefusal`: `issuer`, `audience`, `expired` (`exp` plus the leeway is
    ///   past), `not_yet_valid` (`nbf` or `iat` minus the leeway is ahead), `claims` (a missing or
    ///   ill-typed `exp`, `sub`, account or mode claim, an apps claim that is not 1 to 100 app ids).
    public static func claims(_ value: JSONValue, settings: AccessTokenSettings, now: Date) throws -> AccessTokenClaims {
        guard case .object(let c) = value else { throw AccessTokenRefusal("malformed", "the token claims are not a JSON object") }
        guard case .string(let iss)? = c["iss"], iss == settings.issuer else {
            throw AccessTokenRefusal("issuer", "the token's iss is not this API's authorization server")
        }
        let audiences: [String]
        switch c["aud"] {
        case .string(let a)?: audiences = [a]
        case .array(let list)?: audiences = list.compactMap { if case .string(let a) = $0 { return a } else { return nil } }
        default: audiences = []
        }
        guard audiences.contains(settings.audience) else {
            throw AccessTokenRefusal("audience", "the token's aud does not name this API")
        }
        let t = now.timeIntervalSince1970
        guard let exp = number(c["exp"]) else { throw AccessTokenRefusal("claims", "the token has no numeric exp") }
        guard t < exp + settings.leewaySeconds else { throw AccessTokenRefusal("expired", "the token has expired") }
        if let raw = c["nbf"] {
            guard let nbf = number(raw) else { throw AccessTokenRefusal("claims", "the token's nbf is not a number") }
            guard t >= nbf - settings.leewaySeconds else { throw AccessTokenRefusal("not_yet_valid", "the token is not valid yet (nbf)") }
        }
        if let raw = c["iat"] {
            guard let iat = number(raw) else { throw AccessTokenRefusal("claims", "the token's iat is not a number") }
            guard t >= iat - settings.leewaySeconds else { throw AccessTokenRefusal("not_yet_valid", "the token was issued in the future (iat)") }
        }
        guard case .string(let sub)? = c["sub"], !sub.isEmpty, sub.unicodeScalars.count <= 255 else {
            throw AccessTokenRefusal("claims", "the token needs a sub of 1 to 255 characters")
        }
        guard case .string(let accountText)? = c[accountClaim], let account = PrefixedID.parse(accountText, as: .account) else {
            throw AccessTokenRefusal("claims", "the token needs \(accountClaim), an account id (pacc_...)")
        }
        guard case .string(let modeText)? = c[modeClaim], let mode = Mode(rawValue: modeText) else {
            throw AccessTokenRefusal("claims", "the token needs \(modeClaim), test or live")
        }
        var scope = ""
        switch c["scope"] {
        case nil: scope = ""
        case .string(let s)?: scope = s
        default: throw AccessTokenRefusal("claims", "the token's scope must be a string")
        }
        var apps: [UUID]?
        if let raw = c[appsClaim] {
            guard case .array(let list) = raw, (1...100).contains(list.count) else {
                throw AccessTokenRefusal("claims", "\(appsClaim) must be an array of 1 to 100 app ids")
            }
            apps = try list.map {
                guard case .string(let s) = $0, let id = PrefixedID.parse(s, as: .app) else {
                    throw AccessTokenRefusal("claims", "\(appsClaim) must hold app ids (papp_...)")
                }
                return id
            }
        }
        return AccessTokenClaims(subject: sub, accountID: account, mode: mode, permissions: permissions(scope: scope),
                                 appIDs: apps, expiresAt: Date(timeIntervalSince1970: exp))
    }

    /// A JSON number as seconds (NumericDate, RFC 7519 §2), nil for anything else or non-finite.
    static func number(_ value: JSONValue?) -> Double? {
        guard case .number(let text)? = value, let d = Double(text), d.isFinite else { return nil }
        return d
    }
}
