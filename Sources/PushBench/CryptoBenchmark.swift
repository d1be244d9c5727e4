import Foundation
@_spi(Benchmarks) import PushCrypto

/// Micro-benchmarks of the sealing path, in CPU microseconds of the calling thread
/// (`CLOCK_THREAD_CPUTIME_ID`), so other load on the machine barely moves them. Used by the
/// `PUSH_BENCH=1` test and by `scripts/bench`. The floor measured 56 to 70 us on the 2-core
/// machine of docs/bench.md; the sealer's target is at most 1.5 times the floor.
public enum CryptoBenchmark {
    /// CPU microseconds of one fixed-base multiplication (d·G) plus one variable-base
    /// multiplication (d·Q), each with its point encoding: the arithmetic any P-256 HPKE seal
    /// must do, measured with the same OpenSSL calls the sealer uses. Average over `iterations` (≥ 1).
    /// - Throws: `OPENSSL_FAILURE`.
    public static func floorMicroseconds(iterations: Int) throws -> Double {
        let peer = try P256PrivateKey.generate().publicKey.raw
        return try P256ScratchPool.shared.withScratch { scratch in
            defer { scratch.clearScalar() }
            _ = try scratch.loadRandomScalar()
            try scratch.loadPoint(peer)
            _ = try scratch.generatorMultiple()
            let count = max(iterations, 1)
            let start = threadCPUSeconds()
            for _ in 0..<count {
                _ = try scratch.generatorMultiple()
                _ = try scratch.sharedSecretX()
            }
            return (threadCPUSeconds() - start) * 1e6 / Double(count)
        }
    }

    /// CPU microseconds per `EnvelopeSealer.seal` of a `plaintextLength`-byte plaintext (default
    /// 87, the vector's size) to a random recipient. Average over `iterations` (≥ 1), after one warm-up.
    /// - Throws: `OPENSSL_FAILURE`.
    public static func sealMicroseconds(iterations: Int, plaintextLength: Int = 87) throws -> Double {
        let sealer = try EnvelopeSealer()
        let recipient = try P256PrivateKey.generate().publicKey
        let plaintext = [UInt8](repeating: 0x61, count: max(plaintextLength, 0))
        _ = try sealer.seal(plaintext, to: recipient)
        let count = max(iterations, 1)
        let start = threadCPUSeconds()
        for _ in 0..<count {
            _ = try sealer.seal(plaintext, to: recipient)
        }
        return (threadCPUSeconds() - start) * 1e6 / Double(count)
    }

    /// CPU time consumed so far by the calling thread, in seconds.
    static func threadCPUSeconds() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }
}
