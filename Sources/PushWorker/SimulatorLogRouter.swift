import Foundation
import PushCore
import PushProviders

/// A failure to open the simulator log, with a stable code (`SIMULATOR_LOG`).
public struct SimulatorLogError: Error, CustomStringConvertible, Sendable {
    /// Stable code.
    public var code = "SIMULATOR_LOG"
    /// Human message (path and errno).
    public var message: String
    /// `CODE: message`.
    public var description: String { "\(code): \(message)" }
}

/// An append-only file: opened `O_WRONLY|O_APPEND|O_CREAT`, each `append` is one `write(2)`, so
/// lines from several processes never interleave (POSIX appends are atomic per write on a local
/// file). Owns the descriptor (closed in `deinit`).
public final class AppendOnlyFile: @unchecked Sendable {
    private let fd: Int32

    private init(fd: Int32) { self.fd = fd }

    deinit { close(fd) }

    /// Opens (creating, mode 0644) `path` for appending. - Throws: `SimulatorLogError`.
    public static func open(path: String) throws -> AppendOnlyFile {
        let fd = Glibc.open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw SimulatorLogError(message: "cannot open \(path) for appending (errno \(errno))") }
        return AppendOnlyFile(fd: fd)
    }

    /// Appends `line` (a newline is added) in one write. Returns false when the write failed or was short.
    @discardableResult
    public func append(_ line: String) -> Bool {
        let bytes = Array((line + "\n").utf8)
        let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        return n == bytes.count
    }
}

/// Wraps a router and records, before answering, every push the simulator accepted (HTTP 200):
/// one line `apns_id device_id app_id` per push. The apns-id is stable per (notification, device)
/// (`push_apns_id`), so a checker maps lines to delivery rows and counts pushes seen twice.
/// For fleet tests (`PUSHFLEET_SIMULATOR_LOG`); live providers' answers are not recorded.
public final class SimulatorLogRouter: ProviderRouter {
    private let inner: ProviderRouter
    private let log: AppendOnlyFile

    /// - Parameters:
    ///   - inner: the router that answers.
    ///   - log: where accepted simulator pushes are appended.
    public init(inner: ProviderRouter, log: AppendOnlyFile) {
        self.inner = inner
        self.log = log
    }

    /// The inner router's credential states (unchanged).
    public func credentialStates(appID: UUID) throws -> CredentialStates { try inner.credentialStates(appID: appID) }

    /// The inner router's answers, in order; accepted simulator pushes are logged first.
    public func send(appID: UUID, mode: Mode, pushes: [OutboundPush]) -> [(ProviderKind, ProviderAnswer)] {
        let answers = inner.send(appID: appID, mode: mode, pushes: pushes)
        let app = appID.uuidString.lowercased()
        for (push, (kind, answer)) in zip(pushes, answers)
        where kind == .simulator && answer.transport == .response && answer.httpStatus == 200 {
            log.append("\(push.apnsID.uuidString.lowercased()) \(push.deviceID.uuidString.lowercased()) \(app)")
        }
        return answers
    }
}
