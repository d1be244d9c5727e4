import Foundation

/// The fields of a Google service-account JSON key file needed to send with FCM v1 (Google's
/// "Using OAuth 2.0 for Server to Server Applications").
/// `description` never shows the private key.
public struct FCMServiceAccount: Sendable, Equatable, CustomStringConvertible {
    /// Firebase project (`project_id`), used in `/v1/projects/<id>/messages:send`.
    public var projectId: String
    /// `client_email`: the assertion's `iss`.
    public var clientEmail: String
    /// `private_key`: PKCS#8 PEM RSA key.
    public var privateKeyPEM: String
    /// `private_key_id`: the assertion's `kid`, when present.
    public var privateKeyId: String?
    /// `token_uri`: the OAuth2 token endpoint and the assertion's `aud`. Default `https://oauth2.googleapis.com/token`.
    public var tokenURI: String

    /// Google's token endpoint.
    public static let defaultTokenURI = "https://oauth2.googleapis.com/token"

    /// Memberwise initializer.
    public init(projectId: String, clientEmail: String, privateKeyPEM: String, privateKeyId: String? = nil,
                tokenURI: String = FCMServiceAccount.defaultTokenURI) {
        self.projectId = projectId
        self.clientEmail = clientEmail
        self.privateKeyPEM = privateKeyPEM
        self.privateKeyId = privateKeyId
        self.tokenURI = tokenURI
    }

    /// Parses a service-account key file.
    /// - Parameter json: the file's bytes (UTF-8 JSON object).
    /// - Throws: `FCMCredentialsError` `fcm.sa_not_json` (not a JSON object), `fcm.sa_wrong_type`
    ///   (`type` present and not `service_account`), `fcm.sa_missing_field` (`project_id`,
    ///   `client_email` or `private_key` missing, empty or not a string).
    public static func parse(json: [UInt8]) throws -> FCMServiceAccount {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(json))) as? [String: Any] else {
            throw FCMCredentialsError.notJSON
        }
        if let type = object["type"], type as? String != "service_account" {
            throw FCMCredentialsError.wrongType
        }
        func required(_ name: String) throws -> String {
            guard let value = object[name] as? String, !value.isEmpty else { throw FCMCredentialsError.missingField(name) }
            return value
        }
        let tokenURI = (object["token_uri"] as? String).flatMap { $0.isEmpty ? nil : $0 } ?? defaultTokenURI
        return FCMServiceAccount(projectId: try required("project_id"), clientEmail: try required("client_email"),
                                 privateKeyPEM: try required("private_key"),
                                 privateKeyId: object["private_key_id"] as? String, tokenURI: tokenURI)
    }

    public var description: String {
        "FCMServiceAccount(project: \(projectId), client: \(clientEmail), key id: \(privateKeyId ?? "-"))"
    }
}

/// Why FCM credentials are unusable: a value with a stable `code` and a human `message`.
public struct FCMCredentialsError: Error, Equatable, CustomStringConvertible, Sendable {
    /// Stable code: `fcm.sa_not_json`, `fcm.sa_wrong_type`, `fcm.sa_missing_field`, `fcm.oauth_failed`.
    public let code: String
    /// Human explanation (never key material or tokens).
    public let message: String
    /// For `fcm.oauth_failed` answered 4xx by the token endpoint: its RFC 6749 §5.2 `error`
    /// (`invalid_grant`, `invalid_client`, ...); nil otherwise.
    public let oauthError: String?

    /// Memberwise initializer.
    public init(code: String, message: String, oauthError: String? = nil) {
        self.code = code
        self.message = message
        self.oauthError = oauthError
    }

    /// The file is not a JSON object.
    public static let notJSON = FCMCredentialsError(code: "fcm.sa_not_json", message: "service account file is not a JSON object")
    /// `type` is not `service_account`.
    public static let wrongType = FCMCredentialsError(code: "fcm.sa_wrong_type", message: "JSON key file is not of type service_account")

    /// A required field is missing or empty.
    public static func missingField(_ name: String) -> FCMCredentialsError {
        FCMCredentialsError(code: "fcm.sa_missing_field", message: "service account field missing: \(name)")
    }

    /// The token endpoint refused the assertion (`oauthError` its `error` for a 4xx) or could not be reached.
    public static func oauthFailed(_ detail: String, oauthError: String? = nil) -> FCMCredentialsError {
        FCMCredentialsError(code: "fcm.oauth_failed", message: detail, oauthError: oauthError)
    }

    public var description: String { "\(code): \(message)" }
}
