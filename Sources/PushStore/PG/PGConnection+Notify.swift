internal import CLibpq
import Glibc

/// One NOTIFY received on a `LISTEN`ed channel.
public struct PGNotification: Sendable, Equatable {
    /// The channel name, exactly as given to `pg_notify` / `LISTEN`.
    public var channel: String
    /// The payload text (empty when none was given).
    public var payload: String
    /// The server process id of the notifying session.
    public var senderProcessID: Int32

    /// Makes a notification value.
    public init(channel: String, payload: String, senderProcessID: Int32) {
        self.channel = channel
        self.payload = payload
        self.senderProcessID = senderProcessID
    }
}

extension PGConnection {
    /// `LISTEN` on `channel` (quoted as an identifier, so the name is case-sensitive and must
    /// match `pg_notify(channel, …)` exactly); kept across `reset()`.
    /// - Throws: as `exec`. Notifications are delivered only outside transactions.
    public func listen(_ channel: String) throws {
        try exec("LISTEN " + Self.quoteIdentifier(channel))
        listenedChannels.insert(channel)
    }

    /// `UNLISTEN` `channel`. - Throws: as `exec`.
    public func unlisten(_ channel: String) throws {
        try exec("UNLISTEN " + Self.quoteIdentifier(channel))
        listenedChannels.remove(channel)
    }

    /// Sends `pg_notify(channel, payload)` (delivered when this session's transaction commits).
    /// - Throws: as `exec` (payloads are limited to 8000 bytes by the server).
    public func notify(_ channel: String, payload: String = "") throws {
        try exec("SELECT pg_notify($1, $2)", [.text(channel), .text(payload)])
    }

    /// Waits until at least one notification arrives or `timeout` seconds pass, and returns all
    /// notifications received so far (empty on timeout). Uses `PQsocket` + `poll` +
    /// `PQconsumeInput` + `PQnotifies`; notifications that arrived during earlier statements are
    /// returned at once. A `timeout` of 0 only checks without waiting.
    /// - Throws: `DB_CONNECTION` (`isConnectionLost`) when the session breaks while waiting.
    public func waitForNotifications(timeout: Double) throws -> [PGNotification] {
        var received = drainNotifications()
        if !received.isEmpty { return received }
        let socket = PQsocket(handle)
        guard socket >= 0 else { throw lostError() }
        let deadline = Self.monotonicSeconds() + max(0, timeout)
        while true {
            let remaining = deadline - Self.monotonicSeconds()
            var fd = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            let ready = poll(&fd, 1, Int32(max(0, min(remaining, 3600)) * 1000))
            if ready < 0 {
                if errno == EINTR { continue }
                throw PGError(code: .connection, message: "poll failed on the database socket (errno \(errno))")
            }
            if ready > 0 {
                guard PQconsumeInput(handle) == 1 else { throw lostError() }
                received = drainNotifications()
                if !received.isEmpty { return received }
            }
            if Self.monotonicSeconds() >= deadline { return [] }
        }
    }

    // MARK: - Internals

    private func drainNotifications() -> [PGNotification] {
        _ = PQconsumeInput(handle)
        var out = [PGNotification]()
        while let n = PQnotifies(handle) {
            let note = n.pointee
            out.append(PGNotification(channel: note.relname.map { String(cString: $0) } ?? "",
                                      payload: note.extra.map { String(cString: $0) } ?? "",
                                      senderProcessID: note.be_pid))
            PQfreemem(n)
        }
        return out
    }

    private func lostError() -> PGError {
        PGError(code: .connection, message: Self.cleanMessage(PQerrorMessage(handle)),
                connectionBroken: PQstatus(handle) != CONNECTION_OK)
    }

    private static func monotonicSeconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}
