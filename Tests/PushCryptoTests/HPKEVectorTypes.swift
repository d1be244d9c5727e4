/// One entry of the RFC 9180 test-vector file (`vectors/hpke_rfc9180_p256_sha256_aes128gcm.json`),
/// with properties named exactly after the file's fields. Hex strings throughout.
struct HPKETestVector: Decodable {
    struct Encryption: Decodable {
        let aad: String
        let ct: String
        let nonce: String
        let pt: String
    }

    struct Export: Decodable {
        let exporter_context: String
        let L: Int
        let exported_value: String
    }

    let mode: Int
    let kem_id: Int
    let kdf_id: Int
    let aead_id: Int
    let info: String
    let ikmR: String
    let ikmE: String
    let skRm: String
    let skEm: String
    let pkRm: String
    let pkEm: String
    let enc: String
    let shared_secret: String
    let key_schedule_context: String
    let secret: String
    let key: String
    let base_nonce: String
    let exporter_secret: String
    let encryptions: [Encryption]
    let exports: [Export]
}

/// The honkio envelope vector (`vectors/honkio_push_v2.json`), fields named as in the file.
/// Keys, `enc` and `ct` are base64url without padding.
struct HonkioPushVector: Decodable {
    struct Suite: Decodable {
        let mode: String
        let kem_id: Int
        let kdf_id: Int
        let aead_id: Int
        let info: String
        let aad: String
    }

    struct KeyPair: Decodable {
        let ikm_hex: String
        let private_key: String
        let public_key: String
        let kid: String?
    }

    struct Envelope: Decodable {
        let v: Int
        let kid: String
        let enc: String
        let ct: String
    }

    let suite: Suite
    let recipient: KeyPair
    let ephemeral: KeyPair
    let plaintext_json: String
    let envelope: Envelope
}
