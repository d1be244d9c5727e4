import PushCore

/// An API refusal: one error shape for every route (R-API-5), `{"error": {"code", "message",
/// "field"}}` plus `bytes_to_cut` for `PUSH_PAYLOAD_TOO_LARGE`. `field` is the body field's name
/// (dotted for nested fields: `subscription.endpoint`) or nil. Messages never quote content, keys
/// or tokens.
public struct APIError: Error, Sendable, Equatable, CustomStringConvertible {
    /// HTTP status.
    public var status: Int
    /// Stable code.
    public var code: String
    /// Human message.
    public var message: String
    /// The body field (or query argument) at fault, if one is.
    public var field: String?
    /// `PUSH_PAYLOAD_TOO_LARGE`: the smallest number of content bytes to cut (R-SEND-7).
    public var bytesToCut: Int?
    /// Extra response headers (`Retry-After`, `Allow`, `WWW-Authenticate`).
    public var headers: [Header] = []

    /// One response header.
    public struct Header: Sendable, Equatable {
        /// Name.
        public var name: String
        /// Value.
        public var value: String
    }

    /// Makes an error.
    public init(status: Int, code: String, message: String, field: String? = nil, bytesToCut: Int? = nil,
                headers: [Header] = []) {
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.bytesToCut = bytesToCut
        self.headers = headers
    }

    /// `STATUS CODE: message`.
    public var description: String { "\(status) \(code): \(message)" }

    /// 400: the body is not JSON, not UTF-8, or a field has the wrong type.
    public static func invalidRequest(_ message: String, field: String? = nil) -> APIError {
        APIError(status: 400, code: "INVALID_REQUEST", message: message, field: field)
    }

    /// 401: no credential, or an unknown, malformed or revoked one.
    public static func unauthorized(_ message: String) -> APIError {
        APIError(status: 401, code: "UNAUTHORIZED", message: message,
                 headers: [Header(name: "WWW-Authenticate", value: "Bearer realm=\"pushfleet\"")])
    }

    /// 403: the key lacks the route's permission (R-API-2), or the change needs a live key.
    public static func forbidden(_ message: String, field: String? = nil) -> APIError {
        APIError(status: 403, code: "PERMISSION_DENIED", message: message, field: field)
    }

    /// 404: no such object for this key's account and mode, or a malformed id (R-API-1, R-API-4).
    public static func notFound(_ message: String, field: String? = nil) -> APIError {
        APIError(status: 404, code: "NOT_FOUND", message: message, field: field)
    }

    /// 405 with `Allow`.
    public static func methodNotAllowed(_ allowed: [String]) -> APIError {
        APIError(status: 405, code: "METHOD_NOT_ALLOWED", message: "this path takes \(allowed.joined(separator: ", "))",
                 headers: [Header(name: "Allow", value: allowed.joined(separator: ", "))])
    }

    /// 415: a body that is not `application/json`.
    public static func unsupportedMediaType() -> APIError {
        APIError(status: 415, code: "UNSUPPORTED_MEDIA_TYPE", message: "send the body as Content-Type: application/json")
    }

    /// 422: a value out of its rules (R-DEV-1, R-DEV-3), or an unknown field.
    public static func validation(_ message: String, field: String?) -> APIError {
        APIError(status: 422, code: ErrorCode.validationError.rawValue, message: message, field: field)
    }

    /// 422: a query argument the route does not take, named by its first 64 characters in the
    /// message (`unknown query argument NAME`) and the field; the one refusal of every route
    /// (`RequestShape`, the lists, usage, user erasure).
    public static func unknownQueryArgument(_ name: String) -> APIError {
        let shown = String(name.prefix(64))
        return validation("unknown query argument \(shown)", field: shown)
    }

    /// 429 with `Retry-After` (whole seconds, at least 1); `message` says whose rate (a key's by default).
    public static func rateLimited(retryAfterSeconds: Double,
                                   message: String = "this key's request rate is over its limit") -> APIError {
        let seconds = max(1, Int(retryAfterSeconds.rounded(.up)))
        return APIError(status: 429, code: "RATE_LIMITED", message: message,
                        headers: [Header(name: "Retry-After", value: String(seconds))])
    }

    /// 503 with `Retry-After: 1`: the database is unreachable or every session is busy.
    public static func unavailable(_ message: String) -> APIError {
        APIError(status: 503, code: "SERVICE_UNAVAILABLE", message: message,
                 headers: [Header(name: "Retry-After", value: "1")])
    }

    /// 503 for what only the operator can mend (a setting the server lacks): no `Retry-After`,
    /// since retrying will not help until the server is configured and restarted.
    public static func misconfigured(_ message: String) -> APIError {
        APIError(status: 503, code: "SERVICE_UNAVAILABLE", message: message)
    }

    /// 500: a bug (no input may cause one).
    public static func internalError() -> APIError {
        APIError(status: 500, code: "INTERNAL_ERROR", message: "an unexpected error; it was logged")
    }

    /// The JSON body.
    public var body: [UInt8] {
        var error: [JSONObject.Member] = [
            .init("code", .string(code)), .init("message", .string(message)),
            .init("field", field.map(JSONValue.string) ?? .null),
        ]
        if let cut = bytesToCut { error.append(.init("bytes_to_cut", .number(String(cut)))) }
        return JSONWriter.bytes(.object(JSONObject([.init("error", .object(JSONObject(error)))])))
    }
}
