internal import CLibpq
import Glibc

extension PGConnection {
    /// Whether an idle session still looks usable, without a round trip: when the server ended the
    /// session (restart, `pg_terminate_backend`), it sent an error and closed the socket, which is
    /// then readable; reading it makes libpq mark the session bad. Costs one `poll` with no wait.
    /// Call only between statements (never during one).
    public func idleSessionLooksUsable() -> Bool {
        guard PQstatus(handle) == CONNECTION_OK else { return false }
        let socket = PQsocket(handle)
        guard socket >= 0 else { return false }
        var fd = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        let ready = poll(&fd, 1, 0)
        if ready == 0 { return true }
        if ready < 0 { return errno == EINTR }
        if fd.revents & Int16(POLLHUP | POLLERR | POLLNVAL) != 0 { return false }
        // Readable while idle: an asynchronous message (a notice, a notification, or the server's
        // goodbye). Read it; a closed socket turns the status bad.
        guard PQconsumeInput(handle) == 1 else { return false }
        return PQstatus(handle) == CONNECTION_OK
    }
}
