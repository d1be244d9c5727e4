/// The RFC 8188 `aes128gcm` header: `salt(16) || rs(4, big-endian) || idlen(1) || keyid(idlen)`.
public struct WebPushContentHeader: Equatable {
    /// The 16-byte salt (RFC 8188 §2.1).
    public let salt: [UInt8]
    /// Record size `rs` in bytes, ciphertext and tag included; at least 18 (RFC 8188 §2).
    public let recordSize: UInt32
    /// The key id, 0...255 bytes; for Web Push the sender's 65-byte ephemeral public key (RFC 8291 §4).
    public let keyID: [UInt8]

    /// Encoded length in bytes: 21 + keyID.count (86 for Web Push).
    public var length: Int { 21 + keyID.count }

    /// Builds a header; throws `INVALID_PARAMETER` for a salt that is not 16 bytes, an `rs`
    /// below 18 or a key id over 255 bytes.
    public init(salt: [UInt8], recordSize: UInt32, keyID: [UInt8]) throws {
        guard salt.count == WebPushContentCoding.saltLength else {
            throw WebPushError.invalidParameter("salt", "the salt is 16 bytes, got \(salt.count)")
        }
        guard recordSize >= WebPushContentCoding.minimumRecordSize else {
            throw WebPushError.invalidParameter("recordSize", "rs must be at least 18, got \(recordSize)")
        }
        guard keyID.count <= 255 else {
            throw WebPushError.invalidParameter("keyID", "a key id has at most 255 bytes, got \(keyID.count)")
        }
        self.salt = salt
        self.recordSize = recordSize
        self.keyID = keyID
    }

    /// Parses the header at the start of `body`. Throws `TRUNCATED` when `body` ends inside
    /// it and `INVALID_HEADER` for an `rs` below 18.
    public static func parse(_ body: [UInt8]) throws -> WebPushContentHeader {
        guard body.count >= 21 else { throw WebPushError.truncated("the header needs 21 bytes, the body has \(body.count)") }
        let rs = body[16..<20].reduce(UInt32(0)) { ($0 << 8) | UInt32($1) }
        let idLength = Int(body[20])
        guard body.count >= 21 + idLength else { throw WebPushError.truncated("the body ends inside the key id") }
        guard rs >= WebPushContentCoding.minimumRecordSize else {
            throw WebPushError.invalidHeader("rs must be at least 18, got \(rs)")
        }
        return try WebPushContentHeader(salt: Array(body[0..<16]), recordSize: rs, keyID: Array(body[21..<(21 + idLength)]))
    }

    /// The header's bytes (`length` of them).
    public func encoded() -> [UInt8] {
        var out = salt
        out.reserveCapacity(length)
        out += [UInt8(truncatingIfNeeded: recordSize >> 24), UInt8(truncatingIfNeeded: recordSize >> 16),
                UInt8(truncatingIfNeeded: recordSize >> 8), UInt8(truncatingIfNeeded: recordSize)]
        out.append(UInt8(keyID.count))
        out += keyID
        return out
    }
}

/// RFC 8188 `aes128gcm` content coding with a given input keying material (IKM): the layer
/// under RFC 8291 Web Push, usable alone for the RFC 8188 §3 examples.
///
/// Key schedule (RFC 8188 §2.2-2.3): `PRK = HMAC-SHA256(salt, IKM)`,
/// `CEK = HMAC-SHA256(PRK, "Content-Encoding: aes128gcm" || 0x00 || 0x01)[0..<16]`,
/// `NONCE = HMAC-SHA256(PRK, "Content-Encoding: nonce" || 0x00 || 0x01)[0..<12]`; record `i`
/// uses `NONCE XOR i`. Each record's plaintext is `data || delimiter || 0x00 * padding`, the
/// delimiter 0x02 for the last record and 0x01 for the others.
public enum WebPushContentCoding {
    /// Salt length in bytes.
    public static let saltLength = 16
    /// Smallest legal record size `rs` (RFC 8188 §2: 16-byte tag + 1 delimiter + 1 byte).
    public static let minimumRecordSize: UInt32 = 18
    /// Bytes a record adds to its data: delimiter (1) + AES-GCM tag (16).
    public static let recordOverhead = 17

    /// One record to encrypt: its data and how many zero bytes of padding follow the delimiter.
    public struct Record: Equatable {
        /// The record's share of the content.
        public var data: [UInt8]
        /// Zero bytes after the delimiter, 0 or more.
        public var padding: Int

        /// A record of `data` followed by `padding` zero bytes after its delimiter.
        public init(data: [UInt8], padding: Int = 0) {
            self.data = data
            self.padding = padding
        }
    }

    /// Content-encryption key (16 bytes) and base nonce (12 bytes) from `ikm` and `salt`.
    static func keyAndNonce(ikm: [UInt8], salt: [UInt8]) throws -> (key: [UInt8], nonce: [UInt8]) {
        let prk = try WebPushDigest.hmacSHA256(key: salt, data: ikm)
        let cek = try WebPushDigest.hmacSHA256(key: prk, data: Array("Content-Encoding: aes128gcm".utf8) + [0x00, 0x01])
        let nonce = try WebPushDigest.hmacSHA256(key: prk, data: Array("Content-Encoding: nonce".utf8) + [0x00, 0x01])
        return (Array(cek[0..<16]), Array(nonce[0..<12]))
    }

    /// The nonce of record `index`: the base nonce XOR `index` as a 96-bit big-endian integer.
    static func recordNonce(_ base: [UInt8], index: Int) -> [UInt8] {
        var nonce = base
        var counter = UInt64(index)
        for i in stride(from: 11, through: 4, by: -1) {
            nonce[i] ^= UInt8(truncatingIfNeeded: counter)
            counter >>= 8
        }
        return nonce
    }

    /// Encrypts `plaintext` as one record: header || AES-128-GCM(data || 0x02 || 0x00*padding).
    /// Output length: 21 + keyID.count + plaintext.count + 1 + padding + 16 bytes.
    /// Throws `INVALID_PARAMETER` for a bad salt, key id, negative padding or a record that
    /// would exceed `recordSize`.
    public static func encrypt(plaintext: [UInt8], ikm: [UInt8], salt: [UInt8], keyID: [UInt8] = [],
                               recordSize: UInt32 = 4096, padding: Int = 0) throws -> [UInt8] {
        try encrypt(records: [Record(data: plaintext, padding: padding)], ikm: ikm, salt: salt,
                    keyID: keyID, recordSize: recordSize)
    }

    /// Encrypts several records as given. Every record but the last must fill exactly
    /// `recordSize` bytes once sealed (data + 1 + padding + 16 == rs), because a receiver splits
    /// the body at multiples of `rs`; the last may be shorter. Throws `INVALID_PARAMETER`
    /// (`records`, `padding`, `recordSize`) otherwise, and for bad header fields.
    public static func encrypt(records: [Record], ikm: [UInt8], salt: [UInt8], keyID: [UInt8] = [],
                               recordSize: UInt32 = 4096) throws -> [UInt8] {
        let header = try WebPushContentHeader(salt: salt, recordSize: recordSize, keyID: keyID)
        guard !records.isEmpty else { throw WebPushError.invalidParameter("records", "at least one record is needed") }
        let rs = Int(recordSize)
        for (i, record) in records.enumerated() {
            guard record.padding >= 0 else { throw WebPushError.invalidParameter("padding", "padding cannot be negative") }
            let sealed = record.data.count + recordOverhead + record.padding
            if i == records.count - 1 {
                guard sealed <= rs else {
                    throw WebPushError.invalidParameter("recordSize", "a record of \(sealed) bytes exceeds rs \(rs)")
                }
            } else if sealed != rs {
                throw WebPushError.invalidParameter("records", "record \(i) is not the last and must seal to exactly rs \(rs) bytes, not \(sealed)")
            }
        }
        let (key, nonce) = try keyAndNonce(ikm: ikm, salt: salt)
        var out = header.encoded()
        for (i, record) in records.enumerated() {
            var padded = record.data
            padded.reserveCapacity(record.data.count + 1 + record.padding)
            padded.append(i == records.count - 1 ? 0x02 : 0x01)
            padded += [UInt8](repeating: 0, count: record.padding)
            out += try WebPushAESGCM.seal(key: key, nonce: recordNonce(nonce, index: i), plaintext: padded)
        }
        return out
    }

    /// Decrypts a complete `aes128gcm` body with `ikm`, any number of records, and returns the
    /// content with delimiters and padding removed. Throws `TRUNCATED` (short header, a record
    /// shorter than 17 bytes, no record, or a last record marked non-final), `INVALID_HEADER`,
    /// `DECRYPTION_FAILED` (tag mismatch) or `INVALID_PADDING` (missing or misplaced delimiter).
    public static func decrypt(body: [UInt8], ikm: [UInt8]) throws -> [UInt8] {
        let header = try WebPushContentHeader.parse(body)
        return try decryptRecords(body: body, header: header, ikm: ikm)
    }

    /// Number of records in `body` after a header of `headerLength` bytes with record size `rs`.
    static func recordCount(bodyLength: Int, headerLength: Int, recordSize: UInt32) -> Int {
        let payload = bodyLength - headerLength
        guard payload > 0 else { return 0 }
        let rs = Int(recordSize)
        return (payload + rs - 1) / rs
    }

    /// Decrypts the records of `body` that follow `header` (see `decrypt(body:ikm:)`).
    static func decryptRecords(body: [UInt8], header: WebPushContentHeader, ikm: [UInt8]) throws -> [UInt8] {
        var offset = header.length
        guard offset < body.count else { throw WebPushError.truncated("the body has a header and no record") }
        let (key, nonce) = try keyAndNonce(ikm: ikm, salt: header.salt)
        let rs = Int(header.recordSize)
        var content = [UInt8]()
        content.reserveCapacity(body.count - offset)
        var index = 0
        while offset < body.count {
            let end = min(offset + rs, body.count)
            let isLast = end == body.count
            guard end - offset > WebPushAESGCM.tagLength else {
                throw WebPushError.truncated("record \(index) has \(end - offset) bytes, fewer than a tag and a delimiter")
            }
            guard let padded = try WebPushAESGCM.open(key: key, nonce: recordNonce(nonce, index: index),
                                                      sealed: body[offset..<end]) else {
                throw WebPushError.decryptionFailed(record: index)
            }
            guard let delimiterAt = padded.lastIndex(where: { $0 != 0 }) else {
                throw WebPushError.invalidPadding("record \(index) has no delimiter")
            }
            switch (padded[delimiterAt], isLast) {
            case (0x02, true), (0x01, false):
                break
            case (0x01, true):
                throw WebPushError.truncated("the last record present is marked as not final")
            case (0x02, false):
                throw WebPushError.invalidPadding("record \(index) is marked final but more records follow")
            default:
                throw WebPushError.invalidPadding("record \(index) ends with delimiter \(padded[delimiterAt]), not 1 or 2")
            }
            content += padded[..<delimiterAt]
            offset = end
            index += 1
        }
        return content
    }
}
