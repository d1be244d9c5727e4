internal import COpenSSL

/// Algorithm objects fetched once from OpenSSL's default provider and shared by every thread
/// (fetched objects are immutable and reference counted, so sharing them is safe). Fetching per
/// call costs a lock and a name lookup each time (OpenSSL 3.0 manual, "Performance" in `crypto(7)`).
final class OpenSSLAlgorithms: @unchecked Sendable {
    /// `EVP_MD` for SHA-256.
    let sha256: OpaquePointer
    /// `EVP_MAC` for HMAC (the digest is set per context).
    let hmac: OpaquePointer
    /// `EVP_CIPHER` for AES-128-GCM (HPKE AEAD id 0x0001).
    let aes128GCM: OpaquePointer
    /// `EVP_CIPHER` for AES-256-GCM (SecretBox).
    let aes256GCM: OpaquePointer

    private init(sha256: OpaquePointer, hmac: OpaquePointer, aes128GCM: OpaquePointer, aes256GCM: OpaquePointer) {
        self.sha256 = sha256
        self.hmac = hmac
        self.aes128GCM = aes128GCM
        self.aes256GCM = aes256GCM
    }

    deinit {
        EVP_MD_free(sha256)
        EVP_MAC_free(hmac)
        EVP_CIPHER_free(aes128GCM)
        EVP_CIPHER_free(aes256GCM)
    }

    /// Fetches every algorithm; frees what was fetched and throws `OPENSSL_FAILURE` if one is missing.
    private static func make() throws -> OpenSSLAlgorithms {
        let md = EVP_MD_fetch(nil, "SHA256", nil)
        let mac = EVP_MAC_fetch(nil, "HMAC", nil)
        let c128 = EVP_CIPHER_fetch(nil, "AES-128-GCM", nil)
        let c256 = EVP_CIPHER_fetch(nil, "AES-256-GCM", nil)
        guard let md, let mac, let c128, let c256 else {
            let error = CryptoError.openSSL("fetching SHA256/HMAC/AES-GCM")
            EVP_MD_free(md)
            EVP_MAC_free(mac)
            EVP_CIPHER_free(c128)
            EVP_CIPHER_free(c256)
            throw error
        }
        return OpenSSLAlgorithms(sha256: md, hmac: mac, aes128GCM: c128, aes256GCM: c256)
    }

    private static let cached: Result<OpenSSLAlgorithms, CryptoError> = {
        do { return .success(try make()) } catch let error as CryptoError { return .failure(error) } catch {
            return .failure(CryptoError(code: .openSSLFailure, message: "\(error)"))
        }
    }()

    /// The process-wide instance (fetched on first use, thread-safe lazy initialisation).
    static func shared() throws -> OpenSSLAlgorithms { try cached.get() }
}
