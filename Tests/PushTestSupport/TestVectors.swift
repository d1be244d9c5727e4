import Foundation

/// The published test vectors, kept in the repository at `Tests/Vectors/` (their sources and
/// SHA-256 are in `Tests/Vectors/README.md`). The one loader for them: a test that needs a vector
/// reads it here, and a missing or unreadable file throws `TestVectors.Missing`, which fails that
/// test (never a skip). Nothing here looks outside the repository.
public enum TestVectors {
    /// The vector files there are.
    public enum File: String, CaseIterable, Sendable {
        /// honkio push encryption v2 (HPKE seal of one notification, with its APNs and FCM payloads).
        case honkioPushV2 = "honkio_push_v2.json"
        /// RFC 9180 Appendix A entry for mode 0, DHKEM(P-256, HKDF-SHA256), HKDF-SHA256, AES-128-GCM.
        case hpkeRFC9180P256 = "hpke_rfc9180_p256_sha256_aes128gcm.json"
        /// pushfleet's own: the exact `ids_only` APNs and FCM bodies of a few notifications (R-IDS-1).
        case pushfleetIDsOnlyV1 = "pushfleet_ids_only_v1.json"
    }

    /// A vector file that is not where it must be: names the path and how to restore it.
    public struct Missing: Error, CustomStringConvertible {
        /// The full path that was read.
        public let path: String
        /// The underlying error (file absent, unreadable).
        public let reason: String
        public var description: String {
            "test vector \(path) cannot be read (\(reason)); it is part of the repository: "
                + "restore it with `git checkout -- Tests/Vectors/` (see Tests/Vectors/README.md)"
        }
    }

    /// `<repo>/Tests/Vectors`.
    public static let directory: URL = RepoPaths.root.appendingPathComponent("Tests/Vectors")

    /// The path of `file` inside the repository.
    public static func url(_ file: File) -> URL { directory.appendingPathComponent(file.rawValue) }

    /// The file's bytes, exactly as stored.
    /// - Throws: `Missing` when the file is absent or unreadable.
    public static func data(_ file: File) throws -> Data { try data(named: file.rawValue) }

    /// The bytes of `name` in `Tests/Vectors/` (exposed so the loader's failure can be tested).
    /// - Throws: `Missing` when the file is absent or unreadable.
    public static func data(named name: String) throws -> Data {
        let url = directory.appendingPathComponent(name)
        do {
            return try Data(contentsOf: url)
        } catch {
            throw Missing(path: url.path, reason: (error as NSError).localizedDescription)
        }
    }

    /// The file decoded as `T` with `JSONDecoder`.
    /// - Throws: `Missing`, or the decoder's error.
    public static func decode<T: Decodable>(_ type: T.Type, from file: File) throws -> T {
        try JSONDecoder().decode(T.self, from: data(file))
    }

    /// The file parsed by `JSONSerialization` (Foundation's parser, independent of PushCore's).
    /// - Throws: `Missing`, or the parser's error.
    public static func jsonObject(_ file: File) throws -> Any {
        try JSONSerialization.jsonObject(with: data(file))
    }
}
