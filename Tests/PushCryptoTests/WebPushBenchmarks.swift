import XCTest
import Foundation
@testable import PushCrypto

/// Web Push encryption cost per message (fresh key pair + ECDH + AES-GCM), by plaintext size.
/// Skipped unless `PUSH_BENCH=1`; prints microseconds per message.
final class WebPushBenchmarks: XCTestCase {
    func testEncryptCostPerMessage() throws {
        try XCTSkipUnless(ProcessInfo.processInfo.environment["PUSH_BENCH"] == "1", "set PUSH_BENCH=1 to run")
        let priv = try WebPushDecryption.generatePrivateKey()
        let pub = try WebPushDecryption.publicKey(privateKey: priv)
        let auth = try WebPushRandom.bytes(16)
        for size in [100, 1000, 3993] {
            let plaintext = [UInt8](repeating: 0x41, count: size)
            let rounds = 2000
            var bytes = 0
            let start = DispatchTime.now().uptimeNanoseconds
            for _ in 0..<rounds {
                bytes += try WebPushEncryption.encrypt(plaintext: plaintext, p256dh: pub, auth: auth).count
            }
            let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / Double(rounds) / 1000
            XCTAssertEqual(bytes, rounds * WebPushEncryption.bodyLength(plaintextLength: size))
            print(String(format: "webpush.encrypt plaintext=%5d bytes: %.1f us/message", size, elapsed))
        }
    }
}
