import Foundation

/// Throwaway CA, server certificate and signing keys made once per test process by
/// `scripts/fakes/mkcerts.py`: `ca.pem`, `server.pem`/`server.key` (valid for 127.0.0.1 and
/// localhost), `apns_key.p8`/`apns_pub.pem` (P-256), `sa_key.pem`/`sa_pub.pem` (RSA service account),
/// and `apns_other.p8` / `sa_other_key.pem`: keys of the same kinds that no fake trusts.
/// The folder is removed when the process exits; the fakes' port files and logs live there too.
public enum FakeMaterial {
    /// Removed at exit.
    nonisolated(unsafe) private static var createdDirectory: String?

    private static let made: Result<String, FakeProcessError> = {
        let python = RepoPaths.fakesPython()
        let dir = NSTemporaryDirectory() + "pushfleet-fakes-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let p = Process()
        p.executableURL = URL(fileURLWithPath: python[0])
        p.arguments = Array(python.dropFirst()) + [RepoPaths.fakesDirectory + "/mkcerts.py", dir]
        do { try p.run() } catch {
            return .failure(FakeProcessError(code: "mkcerts",
                "cannot run \(python) (run scripts/setup: it makes .venv with h2 and cryptography): \(error)"))
        }
        p.waitUntilExit()
        guard p.terminationStatus == 0 else {
            return .failure(FakeProcessError(code: "mkcerts",
                "mkcerts.py failed (\(p.terminationStatus)) with \(python); run scripts/setup"))
        }
        createdDirectory = dir
        atexit { if let dir = FakeMaterial.createdDirectory { try? FileManager.default.removeItem(atPath: dir) } }
        return .success(dir)
    }()

    /// The folder holding the material (made on first use).
    /// - Throws: `FakeProcessError` `mkcerts` when the Python or `mkcerts.py` fails.
    public static func directory() throws -> String { try made.get() }

    /// Absolute path of material file `name` (e.g. `ca.pem`).
    public static func file(_ name: String) throws -> String { try directory() + "/" + name }

    /// Contents of material file `name` as UTF-8 text (PEM files).
    public static func text(_ name: String) throws -> String { try String(contentsOfFile: file(name), encoding: .utf8) }

    /// Contents of material file `name` as bytes.
    public static func bytes(_ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: file(name))))
    }
}
