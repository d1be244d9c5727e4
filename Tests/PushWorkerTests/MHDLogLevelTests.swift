import CPushShims
import XCTest

/// The level of libmicrohttpd's messages in our JSON logs (`cpush_mhd_log`, used by the metrics
/// server and the API): a peer that goes away before or while sending a request (a TCP health
/// check, a client that gives up, `MetricsSlowClientTests`' attackers) is a debug line, written only
/// at `PUSHFLEET_LOG_LEVEL=debug`; what says something about the server stays a warning.
final class MHDLogLevelTests: XCTestCase {
    /// libmicrohttpd 0.9.75's format strings for a peer that went away: debug (0).
    func testPeerClosuresAreDebug() {
        for fmt in ["Connection socket is closed when reading request due to the error: %s\n",
                    "Connection was closed by remote side with incomplete request.\n",
                    "The connection was forcibly closed by remote peer\n",
                    "Socket has been disconnected when reading request.\n"] {   // a reset mid-request (fresh-user trial)
            XCTAssertEqual(cpush_mhd_log_level(fmt), 0, fmt)
        }
    }

    /// The server's own conditions stay warnings (2), and so does anything unknown.
    func testServerConditionsAreWarnings() {
        for fmt in ["Server reached connection limit. Closing inbound connection.\n",
                    "Received HTTP/1.1 request without `Host' header.\n",
                    "Error processing request: %s\n",
                    "connection", ""] {
            XCTAssertEqual(cpush_mhd_log_level(fmt), 2, fmt)
        }
        XCTAssertEqual(cpush_mhd_log_level(nil), 2)
    }
}
