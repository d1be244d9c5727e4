import Dispatch
import Foundation
import XCTest
import PushCrypto

/// The worker seals with `DispatchQueue.concurrentPerform` (R-ENC-1, R-ENC-8): one shared
/// `EnvelopeSealer` must give correct, independent envelopes from many threads at once.
final class EnvelopeSealerConcurrencyTests: XCTestCase {
    private final class Collector: @unchecked Sendable {
        private let lock = NSLock()
        private(set) var items: [(recipient: Int, plaintext: [UInt8], enc: [UInt8], ct: [UInt8])] = []
        private(set) var errors: [Error] = []

        func add(_ item: (Int, [UInt8], [UInt8], [UInt8])) {
            lock.lock(); items.append(item); lock.unlock()
        }

        func fail(_ error: Error) {
            lock.lock(); errors.append(error); lock.unlock()
        }
    }

    func testSealingFrom8ConcurrentThreadsGivesEnvelopesThatAllOpen() throws {
        let sealer = try EnvelopeSealer()
        let recipients = try (0..<4).map { _ in try P256PrivateKey.generate() }
        let publicKeys = recipients.map(\.publicKey)
        let collector = Collector()
        let perThread = 40
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            for index in 0..<perThread {
                let recipient = (thread + index) % publicKeys.count
                let plaintext = Array("{\"title\":\"t\(thread)\",\"body\":\"\(index)\"}".utf8)
                    + [UInt8](repeating: UInt8(thread), count: index)
                do {
                    let sealed = try sealer.seal(plaintext, to: publicKeys[recipient])
                    collector.add((recipient, plaintext, sealed.enc, sealed.ct))
                } catch {
                    collector.fail(error)
                }
            }
        }
        XCTAssertTrue(collector.errors.isEmpty, "\(collector.errors)")
        XCTAssertEqual(collector.items.count, 8 * perThread)
        XCTAssertEqual(Set(collector.items.map(\.enc)).count, collector.items.count, "ephemeral keys must be fresh")
        for item in collector.items {
            XCTAssertEqual(item.ct.count, EnvelopeSealer.ciphertextLength(plaintextLength: item.plaintext.count))
            let opened = try sealer.open(enc: item.enc, ct: item.ct, with: recipients[item.recipient])
            XCTAssertEqual(opened, item.plaintext)
            let other = recipients[(item.recipient + 1) % recipients.count]
            XCTAssertThrowsError(try sealer.open(enc: item.enc, ct: item.ct, with: other))
        }
    }

    func testOpeningConcurrentlyMatchesSequentialSeals() throws {
        let sealer = try EnvelopeSealer()
        let recipient = try P256PrivateKey.generate()
        let plaintexts = (0..<64).map { Array("message \($0)".utf8) }
        let sealed = try plaintexts.map { try sealer.seal($0, to: recipient.publicKey) }
        let collector = Collector()
        DispatchQueue.concurrentPerform(iterations: sealed.count) { index in
            do {
                let opened = try sealer.open(enc: sealed[index].enc, ct: sealed[index].ct, with: recipient)
                collector.add((index, opened, [], []))
            } catch {
                collector.fail(error)
            }
        }
        XCTAssertTrue(collector.errors.isEmpty, "\(collector.errors)")
        XCTAssertEqual(collector.items.count, plaintexts.count)
        for item in collector.items {
            XCTAssertEqual(item.plaintext, plaintexts[item.recipient])
        }
    }
}
