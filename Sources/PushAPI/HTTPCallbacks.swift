internal import CMicroHTTPD
internal import CPushShims
import Foundation
import Glibc

// The C callbacks of `HTTPServer`. libmicrohttpd calls, per connection: notify(STARTED); per
// request: uriLog (request line read: the request's state is made and its deadline starts), the
// access handler (once when the headers are in, once per body chunk, once at the end, and once
// more after a resume), completed; and notify(CLOSED) before it closes the socket.

private func core(_ cls: UnsafeMutableRawPointer?) -> ServerCore? {
    cls.map { Unmanaged<ServerCore>.fromOpaque($0).takeUnretainedValue() }
}

func httpConnectionNotify(cls: UnsafeMutableRawPointer?, connection: OpaquePointer?,
                          socketContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
                          code: MHD_ConnectionNotificationCode) {
    guard let core = core(cls), let connection else { return }
    if code == .CONNECTION_NOTIFY_STARTED {
        core.tracker.opened(connection, fd: cpush_http_connection_fd(connection), now: ConnectionTracker.now())
    } else if let orphan = core.tracker.closed(connection) {
        // A request that never reached the handler or never completed (too large a header block
        // for libmicrohttpd, a deadline, the client gone): logged without a status.
        report(core, orphan, status: 0, abort: orphan.started ? "closed" : "incomplete")
    }
}

func httpURILog(cls: UnsafeMutableRawPointer?, uri: UnsafePointer<CChar>?, connection: OpaquePointer?) -> UnsafeMutableRawPointer? {
    guard let core = core(cls), let connection else { return nil }
    let state = RequestState()
    if let uri { state.target = Array(UnsafeRawBufferPointer(start: uri, count: strlen(uri))) }
    core.tracker.requestStarted(connection, state, now: state.start)
    return Unmanaged.passUnretained(state).toOpaque()
}

func httpRequestCompleted(cls: UnsafeMutableRawPointer?, connection: OpaquePointer?,
                          context: UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
                          code: MHD_RequestTerminationCode) {
    guard let core = core(cls), let connection else { return }
    guard let state = core.tracker.requestEnded(connection, now: ConnectionTracker.now()) else { return }
    let abort: String?
    switch code {
    case .REQUEST_TERMINATED_COMPLETED_OK: abort = nil
    case .REQUEST_TERMINATED_TIMEOUT_REACHED: abort = "idle_timeout"
    case .REQUEST_TERMINATED_DAEMON_SHUTDOWN: abort = "shutdown"
    case .REQUEST_TERMINATED_CLIENT_ABORT: abort = "client_closed"
    default: abort = "error"
    }
    if state.status == 0, !state.started, code == .REQUEST_TERMINATED_WITH_ERROR {
        // libmicrohttpd answered the request itself before the handler saw it (a Content-Length
        // that is not a number, a header block too large): its status, and why.
        let refused = Int(cpush_http_queued_status(connection))
        if refused > 0 { return report(core, state, status: refused, abort: "refused") }
    }
    report(core, state, status: state.status, abort: state.status == 0 ? (abort ?? "error") : abort)
}

/// Logs one exchange. A request whose answer a worker computed but that the connection closed
/// before it could be queued (a client that gave up while its request ran) is logged with that
/// answer's status, route and key, and `abort` "unsent": its work was done (a device registered,
/// a notification accepted) though nobody read the answer. Status 0 is left for requests that
/// never got an answer at all.
private func report(_ core: ServerCore, _ state: RequestState, status: Int, abort: String?) {
    var status = status, abort = abort, route = state.route, keyPrefix = state.keyPrefix, client = state.client
    if status == 0, let unsent = state.answer {
        (status, abort, route, keyPrefix, client) = (unsent.status, "unsent", unsent.route, unsent.keyPrefix, unsent.client)
    }
    core.handler.completed(HTTPExchange(method: String(state.method.prefix(16)), route: route, status: status,
                                        seconds: ConnectionTracker.now() - state.start, requestID: state.requestID,
                                        keyPrefix: keyPrefix, client: client, abort: abort))
}

func httpAccessHandler(cls: UnsafeMutableRawPointer?, connection: OpaquePointer?,
                       url: UnsafePointer<CChar>?, method: UnsafePointer<CChar>?,
                       version: UnsafePointer<CChar>?, uploadData: UnsafePointer<CChar>?,
                       uploadDataSize: UnsafeMutablePointer<Int>?,
                       context: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) -> MHD_Result {
    guard let core = core(cls), let connection, let context, let raw = context.pointee else { return .NO }
    let state = Unmanaged<RequestState>.fromOpaque(raw).takeUnretainedValue()
    let config = core.config

    if let answer = state.answer {                    // resumed with the worker's answer
        state.answer = nil
        return queue(core, connection, state, answer)
    }
    if !state.started {                               // headers complete
        state.started = true
        state.method = method.map { String(cString: $0) } ?? ""
        state.path = url.map { String(cString: $0) } ?? "/"
        readHeaders(connection, state, method: method)
        readQuery(connection, state)
        state.closeAfterAnswer = HTTPFraming.closesAfterAnswer(headers: state.headers)
        if state.refusal == nil, cpush_http_target_was_cut(url, state.target.count, version) != 0 {
            state.refusal = HTTPFraming.targetNULRefusal     // a raw NUL: url and target stop at it
        }
        if state.refusal == nil { state.refusal = HTTPFraming.check(target: state.target) }
        if state.headers.count > config.maxHeaderCount || state.headerBytes > config.maxHeaderBytes {
            return queue(core, connection, state, core.handler.serverError(
                status: 431, code: "REQUEST_HEADER_FIELDS_TOO_LARGE",
                message: "at most \(config.maxHeaderCount) headers and \(config.maxHeaderBytes) bytes of headers",
                field: nil, requestID: state.requestID))
        }
        if let refusal = state.refusal ?? HTTPFraming.check(headers: state.headers, version: version.map { String(cString: $0) } ?? "") {
            return queue(core, connection, state, core.handler.serverError(
                status: 400, code: "INVALID_REQUEST", message: refusal.message, field: refusal.field, requestID: state.requestID))
        }
        if let early = core.handler.refusal(method: state.method, path: state.path) {
            return queue(core, connection, state, early)
        }
        if let length = state.headers.last(where: { $0.name == "content-length" }).flatMap({ Int($0.value) }),
           length > config.maxBodyBytes {
            return queue(core, connection, state, tooLarge(core, state))
        }
        return .YES
    }
    if let size = uploadDataSize, size.pointee > 0 {  // a body chunk
        if !state.bodyTooLarge, let data = uploadData {
            if state.body.count + size.pointee > config.maxBodyBytes {
                state.bodyTooLarge = true
                state.body = []
            } else {
                data.withMemoryRebound(to: UInt8.self, capacity: size.pointee) {
                    state.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: size.pointee))
                }
            }
        }
        size.pointee = 0
        return .YES
    }
    if state.dispatched { return .YES }            // a spurious call while suspended
    state.dispatched = true
    core.tracker.requestComplete(connection)
    if state.bodyTooLarge { return queue(core, connection, state, tooLarge(core, state)) }

    let request = HTTPRequest(method: state.method, path: state.path, query: state.query, headers: state.headers,
                              body: state.body, peer: peerAddress(connection), requestID: state.requestID)
    state.body = []
    guard let workers = core.workers else {
        return queue(core, connection, state, core.handler.handle(request))
    }
    core.suspended.add(1)
    MHD_suspend_connection(connection)
    let submitted = workers.submit { [core] in
        state.answer = core.handler.handle(request)
        core.suspended.add(-1)
        MHD_resume_connection(connection)
    }
    if !submitted {
        state.answer = core.handler.serverError(status: 503, code: "SERVICE_UNAVAILABLE",
                                                message: "the server is at capacity; retry shortly", field: nil, requestID: state.requestID)
        core.suspended.add(-1)
        MHD_resume_connection(connection)
    }
    return .YES
}

private func tooLarge(_ core: ServerCore, _ state: RequestState) -> HTTPResponse {
    core.handler.serverError(status: 413, code: "REQUEST_TOO_LARGE",
                             message: "the body is over \(core.config.maxBodyBytes) bytes", field: nil, requestID: state.requestID)
}

private func queue(_ core: ServerCore, _ connection: OpaquePointer, _ state: RequestState, _ answer: HTTPResponse) -> MHD_Result {
    state.status = answer.status
    state.route = answer.route
    state.keyPrefix = answer.keyPrefix
    state.client = answer.client
    var body = answer.body
    let response = body.withUnsafeMutableBytes { buffer in
        MHD_create_response_from_buffer(buffer.count, buffer.baseAddress, .RESPMEM_MUST_COPY)
    }
    guard let response else { return .NO }
    defer { MHD_destroy_response(response) }
    for (name, value) in answer.headers { _ = MHD_add_response_header(response, name, value) }
    _ = MHD_add_response_header(response, "Request-Id", state.requestID)
    if core.draining.current || state.closeAfterAnswer { _ = MHD_add_response_header(response, "Connection", "close") }
    return MHD_queue_response(connection, UInt32(answer.status), response)
}

/// Collects headers (names lower-cased), counting them and their bytes. libmicrohttpd gives each
/// value cut at its first NUL, so a value the client sent with a NUL inside or at its end is found
/// from the bytes libmicrohttpd left in place in the header block, which starts at `method`
/// (`cpush_http_value_state`), and refused (`HTTPFraming`), never read as its prefix: `zz\0first`,
/// `zz\0second` and `zz\0` are not the key `zz`. A folded header is refused too.
private func readHeaders(_ connection: OpaquePointer, _ state: RequestState, method: UnsafePointer<CChar>?) {
    final class Raw { var fields: [(key: UnsafePointer<CChar>, keySize: Int, value: UnsafePointer<CChar>?, valueSize: Int)] = [] }
    let raw = Raw()
    let box = Unmanaged.passUnretained(raw).toOpaque()
    _ = MHD_get_connection_values_n(connection, .HEADER_KIND, { cls, _, key, keySize, value, valueSize in
        guard let cls, let key else { return .YES }
        Unmanaged<Raw>.fromOpaque(cls).takeUnretainedValue().fields.append((key, keySize, value, valueSize))
        return .YES
    }, box)
    let blockSize = cpush_http_header_size(connection)
    let blockEnd = blockSize > 0 ? method.map { $0 + blockSize } : nil
    for (i, f) in raw.fields.enumerated() {
        let name = f.key.withMemoryRebound(to: UInt8.self, capacity: f.keySize) { UnsafeBufferPointer(start: $0, count: f.keySize) }
        let bytes = f.value.map { v in v.withMemoryRebound(to: UInt8.self, capacity: f.valueSize) { UnsafeBufferPointer(start: $0, count: f.valueSize) } }
            ?? UnsafeBufferPointer(start: nil, count: 0)
        if state.refusal == nil { state.refusal = HTTPFraming.check(name: name, value: bytes) }
        if state.refusal == nil {
            let next = i + 1 < raw.fields.count ? raw.fields[i + 1].key : nil
            switch cpush_http_value_state(f.key, f.keySize, f.value, f.valueSize, next, blockEnd == nil ? nil : method, blockEnd) {
            case Int32(CPUSH_HTTP_VALUE_NUL.rawValue): state.refusal = HTTPFraming.nulRefusal(String(decoding: name, as: UTF8.self))
            case Int32(CPUSH_HTTP_VALUE_FOLDED.rawValue): state.refusal = HTTPFraming.foldedRefusal(name)
            default: break
            }
        }
        let valid = String(validating: bytes, as: UTF8.self)
        state.headerBytes += f.keySize + f.valueSize
        state.headers.append(HTTPRequest.Header(String(decoding: name, as: UTF8.self), valid ?? String(decoding: bytes, as: UTF8.self),
                                                validUTF8: valid != nil))
    }
}

/// Collects query arguments in order (at most 64; more are ignored and the API refuses the
/// request, as each route knows its arguments). Read with their lengths: a decoded NUL (`%00`)
/// is refused (`HTTPFraming`) rather than ending the value there.
private func readQuery(_ connection: OpaquePointer, _ state: RequestState) {
    let box = Unmanaged.passUnretained(state).toOpaque()
    _ = MHD_get_connection_values_n(connection, .GET_ARGUMENT_KIND, { cls, _, key, keySize, value, valueSize in
        guard let cls, let key else { return .YES }
        let state = Unmanaged<RequestState>.fromOpaque(cls).takeUnretainedValue()
        guard state.query.count < 64 else { return .NO }
        let (name, nameValid) = decodeUTF8(key, keySize)
        let decoded = value.map { decodeUTF8($0, valueSize) }
        if state.refusal == nil, name.utf8.contains(0) || decoded?.0.utf8.contains(0) == true {
            state.refusal = HTTPFraming.Refusal(field: name, message: "the query argument \(name) contains a NUL byte")
        }
        state.query.append(HTTPRequest.QueryItem(name, decoded?.0, validUTF8: nameValid && decoded?.1 ?? true))
        return .YES
    }, box)
}

/// `count` bytes at `c` as text, and whether they were UTF-8 (else U+FFFD stands where they were not).
private func decodeUTF8(_ c: UnsafePointer<CChar>, _ count: Int) -> (String, Bool) {
    let bytes = c.withMemoryRebound(to: UInt8.self, capacity: count) { UnsafeBufferPointer(start: $0, count: count) }
    if let s = String(validating: bytes, as: UTF8.self) { return (s, true) }
    return (String(decoding: bytes, as: UTF8.self), false)
}

private func peerAddress(_ connection: OpaquePointer) -> String {
    var buffer = [CChar](repeating: 0, count: 64)
    return cpush_http_client_address(connection, &buffer, buffer.count) == 0 ? String(cString: buffer) : "unknown"
}
