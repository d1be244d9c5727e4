import Foundation
import XCTest
import PushCore
import PushProviders
import PushTestSupport
@testable import PushStore
@testable import PushWorker

/// Which HTTP/2 client the live router gives APNs and FCM (`PUSHFLEET_PROVIDER_HTTP_CLIENT`,
/// docs/live.md): nghttp2 by default, libcurl as the fallback, through the whole worker.
final class LiveTransportTests: LiveTestCase {
    func testTheProviderHTTPClientComesFromTheEnvironment() throws {
        XCTAssertEqual(try LiveRouter.providerTransport([:]), .nghttp2)
        XCTAssertEqual(try LiveRouter.providerTransport(["PUSHFLEET_PROVIDER_HTTP_CLIENT": ""]), .nghttp2)
        XCTAssertEqual(try LiveRouter.providerTransport(["PUSHFLEET_PROVIDER_HTTP_CLIENT": "libcurl"]), .libcurl)
        XCTAssertEqual(try LiveRouter.providerTransport(["PUSHFLEET_PROVIDER_HTTP_CLIENT": "nghttp2"]), .nghttp2)
        XCTAssertThrowsError(try LiveRouter.providerTransport(["PUSHFLEET_PROVIDER_HTTP_CLIENT": "curl"])) { error in
            XCTAssertEqual((error as? PushError)?.code, .validationError)
        }
    }

    func testBothClientsDeliverThroughTheWorker() throws {
        var windows: [HTTPTransportKind: Set<Int>] = [:]
        for transport in HTTPTransportKind.allCases {
            let before = Set(fakes.apns.log("client_settings").compactMap { $0["conn"] as? Int })
            try makeRouterAndWorker(owner: "live-\(transport)") { $0.providerTransport = transport }
            try setAPNs()
            try setFCM()
            let ios = try device("ok-\(transport)"), android = try device("ok-\(transport)", platform: .android, n: 1)
            let n = try send()
            try drain()
            XCTAssertEqual(try delivery(n, ios.id).status, "sent", "\(transport): APNs")
            XCTAssertEqual(try delivery(n, android.id).status, "sent", "\(transport): FCM")
            // Which client made the APNs connection: each announces its own stream window.
            windows[transport] = Set(fakes.apns.log("client_settings")
                .filter { !before.contains($0["conn"] as? Int ?? 0) }
                .compactMap { $0["initial_window_size"] as? Int })
        }
        XCTAssertEqual(windows[.nghttp2], [NGHTTP2Client.streamWindowBytes], "the default is NGHTTP2Client")
        XCTAssertEqual(windows[.libcurl]?.count, 1)
        XCTAssertNotEqual(windows[.libcurl], windows[.nghttp2], "PUSHFLEET_PROVIDER_HTTP_CLIENT=libcurl reached the APNs client")
    }
}
