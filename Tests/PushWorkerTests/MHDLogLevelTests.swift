import CPushShims
import Foundation
@testable import PushWorker
import XCTest

/// The level of libmicrohttpd's messages in our JSON logs (`cpush_mhd_log`, used by the metrics
/// server and the API): a peer that goes away before or while sending a request (a TCP health
/// check, a client that gives up, `MetricsSlowClientTests`' attackers) is a debug line, written only
/// at `PUSHFLEET_LOG_LEVEL=debug`; a request libmicrohttpd refused as the client's fault is an info
/// line, as the access log's 4xx are; what says something about the server stays a warning.
final class MHDLogLevelTests: XCTestCase {
    private func level(_ fmt: String?, _ arguments: [CVarArg] = []) -> Int32 {
        withVaList(arguments) { ap in fmt.map { f in f.withCString { cpush_mhd_log_level($0, ap) } } ?? cpush_mhd_log_level(nil, ap) }
    }

    /// libmicrohttpd 0.9.75's format strings for a peer that went away: debug (0).
    func testPeerClosuresAreDebug() {
        for fmt in ["Connection socket is closed when reading request due to the error: %s\n",
                    "Connection was closed by remote side with incomplete request.\n",
                    "The connection was forcibly closed by remote peer\n",
                    "Socket has been disconnected when reading request.\n"] {   // a reset mid-request (fresh-user trial)
            XCTAssertEqual(level(fmt), 0, fmt)
        }
    }

    /// A request libmicrohttpd refused itself as malformed or too large (fresh-user trial: each was
    /// two warn lines): info (1), and the line it writes with its own answer by that answer's status:
    /// what the client sent (4xx, and 505 for an HTTP version other than 1.x) info, its 500 a warning.
    func testRefusalsOfAClientsRequestAreInfo() {
        for fmt in ["Failed to parse `Content-Length' header. Closing connection.\n",
                    "Too large value of 'Content-Length' header. Closing connection.\n",
                    "Received HTTP/1.1 request without `Host' header.\n"] {
            XCTAssertEqual(level(fmt), 1, fmt)
        }
        let answer = "Error processing request (HTTP response code is %u ('%s')). Closing connection.\n"
        for status in [400, 413, 414, 431, 505] as [UInt32] {
            XCTAssertEqual(level(answer, [status, "<html>"]), 1, "\(status)")
        }
        XCTAssertEqual(level(answer, [UInt32(500), "<html>"]), 2, "its own 500 is the server's")
    }

    /// The server's own conditions stay warnings (2), and so does anything unknown.
    func testServerConditionsAreWarnings() {
        for fmt in ["Server reached connection limit. Closing inbound connection.\n",
                    "Error processing request: %s\n",
                    "connection", ""] {
            XCTAssertEqual(level(fmt), 2, fmt)
        }
        XCTAssertEqual(level(nil), 2)
    }

    /// One owner for PUSHFLEET_LOG_LEVEL (fresh-user review: the shim read the variable itself,
    /// beside `Log.level(from:)`): the level libmicrohttpd's lines are written at is the one the
    /// Swift side passes when it starts a daemon, whatever the environment says.
    func testTheMinimumIsTheOneSwiftPassesAtStart() throws {
        defer { cpush_mhd_set_log_minimum(Int32(Log.shared.minimum.rawValue)) }
        let before = ProcessInfo.processInfo.environment["PUSHFLEET_LOG_LEVEL"]
        setenv("PUSHFLEET_LOG_LEVEL", "debug", 1)
        defer { if let before { setenv("PUSHFLEET_LOG_LEVEL", before, 1) } else { unsetenv("PUSHFLEET_LOG_LEVEL") } }
        for (level, written) in [(Log.Level.warn, [0, 0, 1, 1]), (.debug, [1, 1, 1, 1]), (Log.level(from: "error"), [0, 0, 0, 1])] {
            let server = try MetricsServer.start(address: MetricsAddress(loopbackOnly: true, port: 0), metrics: WorkerMetrics(),
                                                 logMinimum: level)
            XCTAssertEqual((0...3).map { Int(cpush_mhd_log_writes(Int32($0))) }, written, "\(level)")
            server.stop()
        }
    }
}
