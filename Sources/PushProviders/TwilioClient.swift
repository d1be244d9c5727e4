import Foundation
import PushCore
import PushCrypto

/// Twilio's Programmable Messaging client (Twilio's "Messages resource": Create a Message):
/// `POST <base>/2010-04-01/Accounts/{AccountSid}/Messages.json` with a form body `To`, then
/// `From` or `MessagingServiceSid`, then `Body`, and HTTP basic authentication with the account
/// SID and auth token, or an API key SID and its secret (Twilio's "API keys").
///
/// The transport is always libcurl's (`HTTP2Client`, whatever `transport` says): Twilio's API
/// answers over HTTP/1.1 or HTTP/2, and only that client can give each request a connection of its
/// own. Once only: every request goes out on a connection of its own (`freshConnectionPerRequest`:
/// libcurl never resends a request on its own after a reused connection closed under it), and
/// nothing is retried here; `SMSAnswerTable` decides. Twilio has no idempotency key.
public final class TwilioClient: SMSProvider, @unchecked Sendable {
    /// Who sends the message.
    public enum Sender: Sendable, Equatable {
        /// `From`: a Twilio phone number (E.164), a short code or an alphanumeric sender id.
        case from(String)
        /// `MessagingServiceSid` (`MG` + 32 hex digits): Twilio picks the sender.
        case messagingService(String)
    }

    /// Account, credentials, sender and limits.
    public struct Configuration: Sendable {
        /// The account the messages belong to (`AC` + 32 hex digits): the URL's `{AccountSid}`.
        public var accountSID: String
        /// The basic-auth user: the account SID (with its auth token) or an API key SID (`SK...`).
        public var username: String
        /// The basic-auth password: the auth token or the API key's secret. Never logged.
        public var secret: String
        /// The sender.
        public var sender: Sender
        /// API base URL; tests point it at a fake. Default `https://api.twilio.com`.
        public var baseURL: String = "https://api.twilio.com"
        /// Per-request deadline in milliseconds, from the start of the transfer. Default 10 000.
        public var requestTimeoutMillis: Int = 10_000
        /// Connection settings (CA file); `freshConnectionPerRequest` is always set, and at least 4
        /// requests (connections) of a batch are in flight at once.
        public var http: HTTP2Client.Configuration = HTTP2Client.Configuration()

        /// A configuration; the other fields keep their defaults.
        public init(accountSID: String, username: String, secret: String, sender: Sender) {
            self.accountSID = accountSID
            self.username = username
            self.secret = secret
            self.sender = sender
        }
    }

    /// `twilio`.
    public let name = "twilio"
    /// Settings in force.
    public let configuration: Configuration
    private let http: HTTP2Client

    private init(configuration: Configuration, http: HTTP2Client) {
        self.configuration = configuration
        self.http = http
    }

    /// Creates a client. - Throws: `HTTPClientError` when libcurl cannot start or the CA file is unreadable.
    public static func make(configuration: Configuration) throws -> TwilioClient {
        var http = configuration.http
        http.freshConnectionPerRequest = true
        http.maxHostConnections = max(http.maxHostConnections, 4)
        return TwilioClient(configuration: configuration, http: try HTTP2Client.make(configuration: http))
    }

    /// `<base>/2010-04-01/Accounts/<AccountSid>/Messages.json`.
    public var messagesURL: String {
        "\(configuration.baseURL)/2010-04-01/Accounts/\(FormURLEncoding.escape(configuration.accountSID))/Messages.json"
    }

    /// The form body for `request`: `To`, the sender, `Body` (see the type's documentation).
    public static func formBody(_ request: SMSRequest, sender: Sender) -> [UInt8] {
        let from: (String, String)
        switch sender {
        case .from(let number): from = ("From", number)
        case .messagingService(let sid): from = ("MessagingServiceSid", sid)
        }
        return Array(FormURLEncoding.encode([("To", request.to), from, ("Body", request.body)]).utf8)
    }

    /// The HTTP request for one SMS.
    public func httpRequest(_ request: SMSRequest) -> HTTPRequest {
        let credentials = Array("\(configuration.username):\(configuration.secret)".utf8)
        return HTTPRequest(url: messagesURL, method: "POST",
                           headers: [("authorization", "Basic " + Data(credentials).base64EncodedString()),
                                     ("content-type", "application/x-www-form-urlencoded"),
                                     ("accept", "application/json")],
                           body: Self.formBody(request, sender: configuration.sender),
                           timeoutMillis: configuration.requestTimeoutMillis)
    }

    /// Sends every SMS of `batch` (concurrently, each on its own connection); one answer each.
    public func send(_ batch: [SMSRequest]) -> [ProviderAnswer] {
        guard !batch.isEmpty else { return [] }
        return http.perform(batch.map(httpRequest)).map(TwilioAnswerParser.answer(for:))
    }
}

/// Turns one HTTP outcome from Twilio's Messages resource into a raw `ProviderAnswer`, without
/// judging it (`SMSAnswerTable` does):
/// - 200 / 201: `messageId` = the body's `sid` (clipped to 64 characters), `rawDetail` = its `status`
///   (`queued`, `accepted`, `scheduled`).
/// - any other status: `reason` = the body's numeric `code` as text (Twilio's error code: 21211,
///   20003, 20429...), `rawDetail` = `HTTP <status>` and that code. The body's `message` is not
///   kept: it quotes the recipient's number.
/// - every status: `retryAfterSeconds` = `Retry-After` as delay-seconds.
/// - no response: the transport, with curl's text.
public enum TwilioAnswerParser {
    /// See the type's documentation.
    public static func answer(for outcome: HTTPOutcome) -> ProviderAnswer {
        guard case .response(let response) = outcome else {
            return ProviderAnswer(transport: outcome.transport,
                                  rawDetail: outcome.failureDetail.map { ProviderText.clip($0, limit: 160) })
        }
        var answer = ProviderAnswer(transport: .response, httpStatus: response.status)
        answer.retryAfterSeconds = ProviderText.retryAfterSeconds(response.headers["retry-after"])
        let object = ProviderText.jsonObject(response.body)
        if response.status == 200 || response.status == 201 {
            answer.messageId = (object?["sid"] as? String).map { ProviderText.clip($0, limit: 64) }
            answer.rawDetail = (object?["status"] as? String).map { ProviderText.clip($0, limit: 32) }
            return answer
        }
        if let code = ProviderText.int64(object?["code"]) { answer.reason = String(code) }
        answer.rawDetail = "HTTP \(response.status)" + (answer.reason.map { " code \($0)" } ?? "")
        return answer
    }
}
