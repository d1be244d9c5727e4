import Foundation
import PushCrypto

/// The checks of each credential set kind (R-APP-3), so that a set the worker cannot use is
/// refused at entry; each kind's `CredentialRules` calls its function here. Every refusal is
/// `VALIDATION_ERROR` with a message that never quotes the secret.
public enum CredentialValidation {
    /// Validates a Web Push VAPID set (RFC 8292): the private key is a P-256 PKCS#8 PEM, and the
    /// contact `subject` is a `mailto:` or `https:` URI (Apple's service requires one).
    /// - Returns: the config to store (`subject`, `public_key` = the browsers' `applicationServerKey`).
    /// - Throws: `VALIDATION_ERROR`.
    public static func webpush(subject: String, privateKeyPEM: [UInt8]) throws -> [String: String] {
        guard subject.hasPrefix("mailto:") || subject.hasPrefix("https://"), subject.count <= 255,
              !subject.contains(where: { $0.isWhitespace }) else {
            throw PushError(.validationError, "subject: must be a mailto: or https: contact URI (RFC 8292 §2.1)", field: "subject")
        }
        guard let pem = String(bytes: privateKeyPEM, encoding: .utf8) else {
            throw PushError(.validationError, "vapid key: not UTF-8 text")
        }
        do {
            let keys = try VAPIDKeys(privateKeyPEM: pem)
            return ["subject": subject, "public_key": keys.publicKeyBase64URL]
        } catch {
            throw PushError(.validationError, "vapid key: not a P-256 PKCS#8 PEM private key")
        }
    }

    /// Validates an APNs set: team id and key id are 10 letters or digits, the topic is a non-empty
    /// bundle id without spaces, the `.p8` is a PKCS#8 PEM of a P-256 key (Apple's "Establishing a
    /// token-based connection to APNs").
    /// `overrides` must be among `allowedOverrides` (https URLs).
    /// - Returns: the config to store (`team_id`, `key_id`, `topic` and the overrides).
    /// - Throws: `VALIDATION_ERROR`.
    public static func apns(teamID: String, keyID: String, topic: String, p8PEM: [UInt8],
                            overrides: [String: String], allowedOverrides: Set<String>) throws -> [String: String] {
        try identifier(teamID, name: "team id", field: "team_id")
        try identifier(keyID, name: "key id", field: "key_id")
        guard !topic.isEmpty, topic.count <= 255, !topic.contains(where: { $0.isWhitespace || $0 == "/" }) else {
            throw PushError(.validationError, "topic: must be the app's bundle id (non-empty, no spaces)", field: "topic")
        }
        guard let pem = String(bytes: p8PEM, encoding: .utf8) else {
            throw PushError(.validationError, "p8 key: not UTF-8 text", field: "p8")
        }
        do {
            _ = try JWTSigner.es256(privateKeyPEM: pem, keyId: keyID)
        } catch let e as JWTError {
            throw PushError(.validationError, "p8 key: not a P-256 PKCS#8 PEM private key (\(e.code))", field: "p8")
        }
        var config = try checkedOverrides(overrides, allowed: allowedOverrides, kind: .apns)
        config["team_id"] = teamID
        config["key_id"] = keyID
        config["topic"] = topic
        return config
    }

    /// Validates an FCM service-account key file (Google's "Using OAuth 2.0 for Server to Server
    /// Applications"): a JSON object whose `type` (when present) is `service_account`, with non-empty
    /// `project_id`, `client_email` and an RSA (≥ 2048-bit) `private_key`.
    /// - Returns: the config to store (`project_id`, `client_email`, `private_key_id` if any, overrides).
    /// - Throws: `VALIDATION_ERROR`.
    public static func fcm(serviceAccountJSON: [UInt8], overrides: [String: String],
                           allowedOverrides: Set<String>) throws -> [String: String] {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(serviceAccountJSON))) as? [String: Any] else {
            throw PushError(.validationError, "service account: not a JSON object", field: "service_account")
        }
        if let type = object["type"], type as? String != "service_account" {
            throw PushError(.validationError, "service account: type is not service_account", field: "service_account")
        }
        func field(_ name: String) throws -> String {
            guard let v = object[name] as? String, !v.isEmpty else {
                throw PushError(.validationError, "service account: \(name) missing or empty", field: "service_account.\(name)")
            }
            return v
        }
        let project = try field("project_id"), email = try field("client_email"), key = try field("private_key")
        do {
            _ = try JWTSigner.rs256(privateKeyPEM: key)
        } catch let e as JWTError {
            throw PushError(.validationError, "service account: private_key is not a usable RSA key (\(e.code))", field: "service_account.private_key")
        }
        var config = try checkedOverrides(overrides, allowed: allowedOverrides, kind: .fcm)
        config["project_id"] = project
        config["client_email"] = email
        if let kid = object["private_key_id"] as? String, !kid.isEmpty { config["private_key_id"] = kid }
        return config
    }

    /// Validates a Twilio set (Twilio's "Messages resource" and "API keys"): `account_sid` is `AC`
    /// and 32 hex digits; `api_key_sid`, when given, `SK` and 32 hex digits (the secret is then the
    /// key's, else the account's auth token); exactly one sender, `from` (an E.164 number, a short
    /// code of 5 or 6 digits, or an alphanumeric sender id of 1 to 11 letters, digits and spaces with
    /// a letter) or `messaging_service_sid` (`MG` and 32 hex digits); the secret 16 to 128 printable
    /// ASCII characters without spaces.
    /// - Returns: the config to store (those identifiers and the `twilio_base_url` override).
    /// - Throws: `VALIDATION_ERROR` (never quoting the secret).
    public static func twilio(config: [String: String], secret: [UInt8]) throws -> [String: String] {
        var rest = config
        let account = rest.removeValue(forKey: "account_sid") ?? ""
        let apiKey = rest.removeValue(forKey: "api_key_sid")
        let from = rest.removeValue(forKey: "from"), service = rest.removeValue(forKey: "messaging_service_sid")
        try twilioSID(account, prefix: "AC", name: "account_sid")
        if let apiKey { try twilioSID(apiKey, prefix: "SK", name: "api_key_sid") }
        switch (from, service) {
        case (let number?, nil):
            guard twilioSender(number) else {
                throw PushError(.validationError, "from: must be an E.164 number, a short code or an alphanumeric sender id", field: "from")
            }
        case (nil, let sid?):
            try twilioSID(sid, prefix: "MG", name: "messaging_service_sid")
        default:
            throw PushError(.validationError, "from / messaging_service_sid: give exactly one sender", field: "from")
        }
        guard (16...128).contains(secret.count), secret.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw PushError(.validationError, "\(apiKey == nil ? "auth token" : "api key secret"): must be 16 to 128 printable ASCII characters without spaces",
                            field: apiKey == nil ? "auth_token" : "api_key_secret")
        }
        var stored = try checkedOverrides(rest, allowed: TwilioCredentialRules.overrideKeys, kind: .twilio)
        stored["account_sid"] = account
        stored["api_key_sid"] = apiKey
        stored["from"] = from
        stored["messaging_service_sid"] = service
        return stored
    }

    /// `prefix` and 32 hex digits (Twilio's SIDs).
    static func twilioSID(_ text: String, prefix: String, name: String) throws {
        let hex = text.dropFirst(prefix.count)
        guard text.hasPrefix(prefix), hex.count == 32, hex.allSatisfy({ $0.isASCII && $0.isHexDigit }) else {
            throw PushError(.validationError, "\(name): must be \(prefix) and 32 hex digits", field: name)
        }
    }

    /// A `From` Twilio takes: an E.164 number, a short code, or an alphanumeric sender id.
    static func twilioSender(_ text: String) -> Bool {
        if SMSText.isE164(text) { return true }
        let ascii = text.unicodeScalars.allSatisfy { $0.isASCII }
        if ascii, (5...6).contains(text.count), text.allSatisfy({ $0.isNumber }) { return true }
        return ascii && (1...11).contains(text.count) && text.contains(where: { $0.isLetter })
            && text.allSatisfy({ $0.isLetter || $0.isNumber || $0 == " " })
    }

    static func identifier(_ text: String, name: String, field: String) throws {
        guard text.count == 10, text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
            throw PushError(.validationError, "\(name): must be exactly 10 letters or digits", field: field)
        }
    }

    /// Refuses a config key that is not one of `allowed` (a set's endpoint overrides) and an
    /// override that is not an https URL. - Returns: `overrides`. - Throws: `VALIDATION_ERROR`.
    public static func checkedOverrides(_ overrides: [String: String], allowed: Set<String>,
                                        kind: CredentialKind) throws -> [String: String] {
        for (key, value) in overrides {
            guard allowed.contains(key) else {
                throw PushError(.validationError, "config: \(key.prefix(40)) is not a known \(kind.rawValue) override",
                                field: String(key.prefix(40)))
            }
            guard value.hasPrefix("https://"), URL(string: value)?.host != nil else {
                throw PushError(.validationError, "config: \(key) must be an https:// URL", field: key)
            }
        }
        return overrides
    }
}
