import XCTest
@testable import PushCrypto

/// Device key validation (R-DEV-3: anything that is not a point on the curve is refused) and
/// private key handling. Every bad input gives a typed `CryptoError`, never a crash.
final class P256KeyTests: XCTestCase {
    /// The honkio vector's recipient public key (a valid point).
    private let validKeyText = "BFGHw33ou72Yj1eGoA53xqL29aB_tk5aVfF2PiySBv06hugrUUHAOoXyzC6xpLBnjBfu8DS3Phd3ascQSTTrYPc"
    /// P-256 field prime p and group order n.
    private let fieldPrimeHex = "ffffffff00000001000000000000000000000000ffffffffffffffffffffffff"
    private let orderHex = "ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551"

    private func validRaw() throws -> [UInt8] { try base64URLBytes(validKeyText) }

    private func assertCode<T>(_ code: CryptoError.Code, _ expression: @autoclosure () throws -> T, _ note: String,
                               file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try expression(), note, file: file, line: line) { error in
            XCTAssertEqual((error as? CryptoError)?.code, code, "\(note): \(error)", file: file, line: line)
        }
    }

    func testValidKeyIsAcceptedFromRawAndBase64URL() throws {
        let raw = try validRaw()
        let fromText = try P256PublicKey(base64URL: validKeyText)
        XCTAssertEqual(fromText.raw, raw)
        XCTAssertEqual(try P256PublicKey(raw: raw), fromText)
        XCTAssertEqual(fromText.base64URL, validKeyText)
        XCTAssertEqual(fromText.kid.count, 16)
    }

    func testOffCurvePointIsRefusedRDEV3() throws {
        var raw = try validRaw()
        raw[64] ^= 0x01
        assertCode(.pointNotOnCurve, try P256PublicKey(raw: raw), "y changed")
        var swapped = try validRaw()
        swapped[1] ^= 0x80
        assertCode(.pointNotOnCurve, try P256PublicKey(raw: swapped), "x changed")
        let zeroCoordinates = [UInt8(0x04)] + [UInt8](repeating: 0, count: 64)
        assertCode(.pointNotOnCurve, try P256PublicKey(raw: zeroCoordinates), "(0, 0)")
    }

    func testCompressedAndHybridFormsAreRefused() throws {
        let raw = try validRaw()
        let compressed = [UInt8(0x02 | (raw[64] & 1))] + Array(raw[1...32])
        assertCode(.invalidKeyEncoding, try P256PublicKey(raw: compressed), "33-byte compressed")
        assertCode(.invalidKeyEncoding, try P256PublicKey(raw: [0x03] + Array(raw[1...32])), "0x03 compressed")
        for prefix: UInt8 in [0x02, 0x03, 0x06, 0x07] {
            assertCode(.invalidKeyEncoding, try P256PublicKey(raw: [prefix] + Array(raw[1...])), "prefix \(prefix)")
        }
    }

    func testWrongLengthIsRefused() throws {
        let raw = try validRaw()
        for bad in [[], Array(raw.prefix(64)), raw + [0], Array(raw.dropFirst()), [UInt8](repeating: 4, count: 130)] {
            assertCode(.invalidKeyLength, try P256PublicKey(raw: bad), "length \(bad.count)")
            assertCode(.invalidKeyLength, try P256PublicKey(validatedStoredBytes: bad), "stored length \(bad.count)")
        }
    }

    func testBadBase64URLIsRefused() {
        for text in ["BFGH$w33", "BFGHw", "BFGH+w33", "BFGH w33", "é"] {
            assertCode(.invalidBase64URL, try P256PublicKey(base64URL: text), text)
        }
        assertCode(.invalidKeyLength, try P256PublicKey(base64URL: ""), "empty decodes to zero bytes")
    }

    func testInfinityAndAllZeroAreRefused() {
        assertCode(.pointAtInfinity, try P256PublicKey(raw: [0x00]), "SEC1 infinity")
        assertCode(.pointAtInfinity, try P256PublicKey(validatedStoredBytes: [0x00]), "stored infinity")
        assertCode(.invalidKeyEncoding, try P256PublicKey(raw: [UInt8](repeating: 0, count: 65)), "all zero")
        assertCode(.invalidKeyEncoding, try P256PublicKey(validatedStoredBytes: [UInt8](repeating: 0, count: 65)),
                   "stored all zero")
    }

    func testCoordinateNotBelowFieldPrimeIsRefused() throws {
        let raw = try validRaw()
        let p = try Hex.decode(fieldPrimeHex)
        assertCode(.invalidKeyEncoding, try P256PublicKey(raw: [0x04] + p + Array(raw[33...])), "x = p")
        assertCode(.invalidKeyEncoding, try P256PublicKey(raw: Array(raw[0...32]) + p), "y = p")
        assertCode(.invalidKeyEncoding,
                   try P256PublicKey(raw: [0x04] + [UInt8](repeating: 0xFF, count: 64)), "coordinates all ones")
    }

    func testCorruptStoredKeyFailsAtSealWithTypedError() throws {
        var raw = try validRaw()
        raw[40] ^= 0x10
        let stored = try P256PublicKey(validatedStoredBytes: raw)
        XCTAssertThrowsError(try EnvelopeSealer().seal([1, 2, 3], to: stored)) { error in
            XCTAssertEqual((error as? CryptoError)?.code, .pointNotOnCurve, "\(error)")
        }
        assertCode(.pointNotOnCurve, try HPKE.seal(plaintext: [1], recipient: stored, info: []), "HPKE.seal")
        // The pool's scratch state stays usable after the failure.
        let good = try P256PrivateKey.generate()
        let sealed = try EnvelopeSealer().seal([9, 8, 7], to: good.publicKey)
        XCTAssertEqual(try EnvelopeSealer().open(enc: sealed.enc, ct: sealed.ct, with: good), [9, 8, 7])
    }

    func testPrivateScalarOutOfRangeIsRefused() throws {
        assertCode(.invalidPrivateKey, try P256PrivateKey(rawScalar: [UInt8](repeating: 0, count: 32)), "zero")
        assertCode(.invalidPrivateKey, try P256PrivateKey(rawScalar: Hex.decode(orderHex)), "n")
        assertCode(.invalidPrivateKey, try P256PrivateKey(rawScalar: [UInt8](repeating: 0xFF, count: 32)), "2^256-1")
        assertCode(.invalidKeyLength, try P256PrivateKey(rawScalar: [UInt8](repeating: 1, count: 31)), "31 bytes")
        assertCode(.invalidKeyLength, try P256PrivateKey(rawScalar: [UInt8](repeating: 1, count: 33)), "33 bytes")
        var nMinusOne = try Hex.decode(orderHex)
        nMinusOne[31] -= 1
        let largest = try P256PrivateKey(rawScalar: nMinusOne)
        // (n-1)·G = -G: same x as G, y = p - Gy.
        XCTAssertEqual(Hex.encode(Array(largest.publicKey.raw[1...32])),
                       "6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296")
        let one = try P256PrivateKey(rawScalar: [UInt8](repeating: 0, count: 31) + [1])
        XCTAssertEqual(Hex.encode(one.publicKey.raw),
                       "046b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296"
                       + "4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5")
    }

    func testGeneratedKeysAreDistinctValidAndRoundTrip() throws {
        let a = try P256PrivateKey.generate()
        let b = try P256PrivateKey.generate()
        XCTAssertNotEqual(a.rawScalar, b.rawScalar)
        XCTAssertEqual(a.rawScalar.count, 32)
        XCTAssertEqual(try P256PublicKey(raw: a.publicKey.raw), a.publicKey)
        XCTAssertEqual(try P256PrivateKey(rawScalar: a.rawScalar).publicKey, a.publicKey)
    }

    func testDescriptionsNeverShowKeyMaterial() throws {
        let key = try P256PrivateKey.generate()
        let texts = [key.description, key.publicKey.description, "\(key)", String(describing: key.publicKey)]
        for text in texts {
            XCTAssertFalse(text.contains(Base64URL.encode(key.rawScalar)))
            XCTAssertFalse(text.contains(Hex.encode(key.rawScalar)))
            XCTAssertFalse(text.contains(key.publicKey.base64URL))
            XCTAssertTrue(text.contains(key.publicKey.kid))
        }
    }

    func testSHA256MatchesFIPS180Examples() throws {
        XCTAssertEqual(Hex.encode(try SHA256.hash([])),
                       "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        XCTAssertEqual(Hex.encode(try SHA256.hash(utf8: "abc")),
                       "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }
}
