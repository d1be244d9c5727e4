import Foundation
import XCTest
@testable import PushWorker

/// Issue 13 "Exposure": slow clients against the metrics endpoint at 127.0.0.1, bounded in count
/// and time: the attack scaled down, 5 client addresses (127.0.0.3 to .7) with 16 slow
/// connections each (80, more than the 64 the server takes), each sending a request line and then
/// one header line a second, under MHD's idle timeout, never finishing its request and coming back
/// at once when cut; a probe from 127.0.0.2 every 150 ms for 8 s. (Without the deadline and the
/// eviction, every slot stays taken and no probe is answered, as 0 of 35 were in the issue.)
final class MetricsSlowClientTests: XCTestCase {
    private static let deadline = 2.0
    private static let addresses: [UInt32] = (3...7).map { 0x7F00_0000 + $0 }
    private static let perAddress = 16
    private static let seconds = 8.0

    /// One slow connection of the attack.
    private struct Slow {
        var fd: Int32
        var opened: Date
        var lastLine: Date
    }

    private func openSlow(_ port: UInt16, from source: UInt32) -> Slow? {
        guard let fd = try? RawHTTP.connect(port: port, timeoutSeconds: 1, source: source) else { return nil }
        let line = Array("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n".utf8)
        _ = line.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        return Slow(fd: fd, opened: Date(), lastLine: Date())
    }

    /// True when the server closed or cut `fd` (end of stream or an error other than "no data yet").
    private func isClosed(_ fd: Int32) -> Bool {
        var byte: UInt8 = 0
        let n = recv(fd, &byte, 1, Int32(MSG_DONTWAIT))
        if n == 0 { return true }
        if n < 0 { return errno != EAGAIN && errno != EWOULDBLOCK }
        return false  // an answer byte: the request is not finished, so the server cannot have answered it
    }

    private func probe(_ port: UInt16) -> Bool {
        guard let fd = try? RawHTTP.connect(port: port, timeoutSeconds: 1, source: 0x7F00_0002) else { return false }
        defer { close(fd) }
        let request = Array("GET /healthz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".utf8)
        _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var buffer = [UInt8](repeating: 0, count: 512)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        let head = n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self) : ""
        return head.hasPrefix("HTTP/1.1 200") || head.hasPrefix("HTTP/1.0 200")
    }

    func testProbesAreAnsweredAndSlowRequestsCutWithinTheirDeadlineUnderASlowClientLoad() throws {
        let server = try MetricsServer.start(address: MetricsAddress(loopbackOnly: true, port: 0), metrics: WorkerMetrics(),
                                             connectionLimit: 64, perClientLimit: UInt32(Self.perAddress), timeoutSeconds: 5,
                                             deadlineSeconds: Self.deadline, softLimit: 48)
        defer { server.stop() }
        let stop = Date().addingTimeInterval(Self.seconds)
        let longest = LockedBox(0.0)
        let opened = LockedBox(0)
        let attack = Thread {
            var slow: [UInt32: [Slow]] = [:]
            while Date() < stop {
                let now = Date()
                for source in Self.addresses {
                    var mine = slow[source] ?? []
                    mine.removeAll { s in
                        guard self.isClosed(s.fd) else { return false }
                        longest.update { $0 = max($0, now.timeIntervalSince(s.opened)) }
                        close(s.fd)
                        return true
                    }
                    while mine.count < Self.perAddress, let s = self.openSlow(server.port, from: source) {
                        mine.append(s)
                        opened.update { $0 += 1 }
                    }
                    for i in mine.indices where now.timeIntervalSince(mine[i].lastLine) >= 1 {
                        let line = Array("X-Slow: \(i)\r\n".utf8)
                        _ = line.withUnsafeBytes { send(mine[i].fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                        mine[i].lastLine = now
                    }
                    slow[source] = mine
                }
                Thread.sleep(forTimeInterval: 0.05)
            }
            let end = Date()
            for s in slow.values.joined() {
                longest.update { $0 = max($0, end.timeIntervalSince(s.opened)) }
                close(s.fd)
            }
        }
        attack.start()
        Thread.sleep(forTimeInterval: 1)  // the slow connections first take every slot they can
        var answered = 0, probes = 0
        while Date() < stop.addingTimeInterval(-0.5) {
            probes += 1
            if probe(server.port) { answered += 1 }
            Thread.sleep(forTimeInterval: 0.15)
        }
        while !attack.isFinished { Thread.sleep(forTimeInterval: 0.05) }

        XCTAssertGreaterThanOrEqual(probes, 25)
        XCTAssertGreaterThanOrEqual(Double(answered), 0.95 * Double(probes), "\(answered) of \(probes) probes answered")
        XCTAssertLessThanOrEqual(longest.value, Self.deadline + 1.0,
                                 "a slow request outlived its deadline: \(longest.value) s")
        XCTAssertGreaterThan(opened.value, Self.addresses.count * Self.perAddress, "the slow clients were cut and came back")
        let cut = server.cutConnections
        XCTAssertGreaterThan(cut.deadline + cut.evicted, 0)
    }
}
