/// Why a test helper could not provide its fixture (a fake that did not start, missing
/// certificates, an exhausted pool). `code` is stable (`fake_start`, `mkcerts`, `vectors_missing`,
/// `pool_empty`, `migrate`); `message` is for humans.
public struct FakeProcessError: Error, CustomStringConvertible, Equatable {
    /// Stable machine-readable reason.
    public let code: String
    /// Human-readable detail (may quote the fake's stderr, never a key).
    public let message: String

    /// An error with `code` and `message`.
    public init(code: String, _ message: String) {
        self.code = code
        self.message = message
    }

    /// `<code>: <message>`.
    public var description: String { "\(code): \(message)" }
}
