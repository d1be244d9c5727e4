import XCTest
@testable import PushCrypto

/// JWT signing for providers: APNs ES256 (Apple's "Establishing a token-based connection to APNs"; RFC
/// 7518 §3.4) and Google RS256 (Google's "Using OAuth 2.0 for Server to Server Applications").
final class JWTTests: XCTestCase {
    private let apnsHeader = #"{"alg":"ES256","kid":"ABC123DEFG"}"#
    private let apnsClaims = #"{"iss":"DEF123GHIJ","iat":1700000000}"#

    func testES256TokenHasThreePartsWithTheExactHeaderAndClaims() throws {
        let signer = try JWTSigner.es256(privateKeyPEM: JWTTestKeys.es256PEM, keyId: "ABC123DEFG")
        let token = try signer.sign(header: apnsHeader, claims: apnsClaims)
        let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        XCTAssertEqual(parts.count, 3)
        XCTAssertEqual(Base64URL.decode(parts[0]).map { String(decoding: $0, as: UTF8.self) }, apnsHeader)
        XCTAssertEqual(Base64URL.decode(parts[1]).map { String(decoding: $0, as: UTF8.self) }, apnsClaims)
        XCTAssertEqual(signer.algorithm, .es256)
        XCTAssertEqual(signer.keyId, "ABC123DEFG")
    }

    func testES256SignatureIsRaw64BytesRSAndNeverDER() throws {
        let signer = try JWTSigner.es256(privateKeyPEM: JWTTestKeys.es256PEM, keyId: "ABC123DEFG")
        // ECDSA is randomized: over many signatures some r or s have a leading zero byte, which
        // is where a missing left-pad or a DER blob (0x30 prefix, 70-72 bytes) would show.
        for i in 0..<64 {
            let token = try signer.sign(header: apnsHeader, claims: #"{"iss":"T","iat":\#(i)}"#)
            let signature = try XCTUnwrap(Base64URL.decode(String(token.split(separator: ".")[2])))
            XCTAssertEqual(signature.count, 64, "RFC 7518 §3.4: ES256 JOSE signature is r||s, 64 bytes")
            XCTAssertTrue(signer.verify(token), "signature \(i) must verify")
        }
    }

    func testES256VerifyRejectsADERSignatureOfTheSameValue() throws {
        let signer = try JWTSigner.es256(privateKeyPEM: JWTTestKeys.es256PEM, keyId: "K")
        let token = try signer.sign(header: apnsHeader, claims: apnsClaims)
        let parts = token.split(separator: ".").map(String.init)
        let raw = try XCTUnwrap(Base64URL.decode(parts[2]))
        let der = try XCTUnwrap(JWTSigner.derFromRaw(raw))
        XCTAssertEqual(der.first, 0x30)
        XCTAssertEqual(try JWTSigner.rawFromDER(der), raw, "DER <-> raw round trip")
        let derToken = parts[0] + "." + parts[1] + "." + Base64URL.encode(der)
        XCTAssertFalse(signer.verify(derToken), "RFC 7518 §3.4: APNs refuses DER signatures; so do we")
    }

    func testES256VerifyRejectsTamperedClaims() throws {
        let signer = try JWTSigner.es256(privateKeyPEM: JWTTestKeys.es256PEM, keyId: "K")
        let token = try signer.sign(header: apnsHeader, claims: apnsClaims)
        let parts = token.split(separator: ".").map(String.init)
        let forged = parts[0] + "." + Base64URL.encode(Array(#"{"iss":"DEF123GHIJ","iat":1800000000}"#.utf8)) + "." + parts[2]
        XCTAssertFalse(signer.verify(forged))
        XCTAssertFalse(signer.verify("a.b"))
    }

    func testRS256SignatureMatchesOpenSSLCommandLineByteForByte() throws {
        // PKCS#1 v1.5 is deterministic; expected value from `openssl dgst -sha256 -sign` over the same input.
        let signer = try JWTSigner.rs256(privateKeyPEM: JWTTestKeys.rsaPEM)
        let token = try signer.sign(header: #"{"alg":"RS256","typ":"JWT"}"#, claims: #"{"iss":"test"}"#)
        XCTAssertEqual(token, "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJ0ZXN0In0."
            + "DzqVoHRmVABHfCsEqRyorKcG8hZiQj-EEK0dottPjT3T9t7W-k1vUzYBaUPl5pxPxOw_RnjwgD57N-EIQY_RRuyw8AMxAngNPhMWQGyW4Bt7Mg9n_h5AG-M_pRfrXBHJFrd38el1pr87RNCDS4pXO5-NiWqN86q0Qcz5Tjm30FXksqTlO8dOqqsgWhDl1yYH7ZSYPLTZTU-7Rxy2JwBYLwMHRMj_8wjHdideLVP1G3VAS-QbS0imn0ANeBHc06EOxBa8b67vsPZkARLZnB7RdayBU_PBjQ_rlmVVJpXsmm5wqGnFQk6SnPpjpTWQDcHUTKwiUzR4lol6YtsQUzzRKg")
        XCTAssertTrue(signer.verify(token))
    }

    func testMalformedPEMThrowsTypedError() {
        for pem in ["", "not a key", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"] {
            XCTAssertThrowsError(try JWTSigner.es256(privateKeyPEM: pem, keyId: "K")) { error in
                XCTAssertEqual((error as? JWTError)?.code, "jwt.malformed_pem")
            }
            XCTAssertThrowsError(try JWTSigner.rs256(privateKeyPEM: pem)) { error in
                XCTAssertEqual((error as? JWTError)?.code, "jwt.malformed_pem")
            }
        }
    }

    func testWrongKeyTypesAreRefused() {
        XCTAssertThrowsError(try JWTSigner.es256(privateKeyPEM: JWTTestKeys.rsaPEM, keyId: "K")) { error in
            XCTAssertEqual((error as? JWTError)?.code, "jwt.wrong_key_type")
        }
        XCTAssertThrowsError(try JWTSigner.es256(privateKeyPEM: JWTTestKeys.p384PEM, keyId: "K")) { error in
            XCTAssertEqual((error as? JWTError)?.code, "jwt.wrong_key_type", "ES256 is P-256 only")
        }
        XCTAssertThrowsError(try JWTSigner.rs256(privateKeyPEM: JWTTestKeys.es256PEM)) { error in
            XCTAssertEqual((error as? JWTError)?.code, "jwt.wrong_key_type")
        }
    }

    /// Issue 11: provider token caches are keyed by this value. Expected values from
    /// `openssl pkey -pubout -outform DER | openssl dgst -sha256 -binary`, base64url.
    func testPublicKeyFingerprintIsSHA256OfTheSubjectPublicKeyInfo() throws {
        let es = try JWTSigner.es256(privateKeyPEM: JWTTestKeys.es256PEM, keyId: "K")
        XCTAssertEqual(es.publicKeyFingerprint, "ocddLE0CnZgKZkh30ai5lxV3TDEXjYq2AU-_hqj7lf4")
        XCTAssertEqual(try JWTSigner.es256(privateKeyPEM: JWTTestKeys.es256PEM, keyId: "OTHER").publicKeyFingerprint,
                       es.publicKeyFingerprint, "the key id is not part of the key")
        XCTAssertEqual(try JWTSigner.rs256(privateKeyPEM: JWTTestKeys.rsaPEM).publicKeyFingerprint,
                       "oqoI7DFUJNNWZ-uI3ek3bC23wviwA7ecWu_N4zJfvfI")
        let other = try JWTSigner.es256(privateKeyPEM: try VAPIDKeys.generate().privateKeyPEM(), keyId: "K")
        XCTAssertNotEqual(other.publicKeyFingerprint, es.publicKeyFingerprint)
        XCTAssertEqual(other.publicKeyFingerprint.count, 43)
    }
}
