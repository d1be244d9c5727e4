internal import CNGHTTP2

/// The nghttp2 callbacks and options every session of an `NGHTTP2Client` uses. The callbacks are
/// `@convention(c)` closures that capture nothing: the session's user data is the `H2Connection`
/// (unretained; the connection deletes its session before it goes away) and a stream's user data
/// is the index of its request in the batch plus one.
final class H2SessionTemplate {
    let callbacks: OpaquePointer
    let option: OpaquePointer

    /// - Throws: `HTTPClientError.tlsInit` when nghttp2 cannot allocate them.
    init() throws {
        var cb: OpaquePointer?
        var opt: OpaquePointer?
        guard nghttp2_session_callbacks_new(&cb) == 0, let callbacks = cb else { throw HTTPClientError.tlsInit("nghttp2 callbacks") }
        guard nghttp2_option_new(&opt) == 0, let option = opt else {
            nghttp2_session_callbacks_del(callbacks)
            throw HTTPClientError.tlsInit("nghttp2 options")
        }
        self.callbacks = callbacks
        self.option = option
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, h2OnFrameRecv)
        nghttp2_session_callbacks_set_on_header_callback(callbacks, h2OnHeader)
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, h2OnDataChunk)
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, h2OnStreamClose)
        // Until the server's SETTINGS arrive we open one stream ourselves (H2Connection.streamCapacity);
        // nghttp2's own guard (100 streams) stays underneath. PINGs are acknowledged by nghttp2.
    }

    deinit {
        nghttp2_session_callbacks_del(callbacks)
        nghttp2_option_del(option)
    }
}

/// The request index a stream was opened for, or nil for a stream that is not ours.
@inline(__always) func h2RequestIndex(_ session: OpaquePointer?, _ streamId: Int32) -> Int? {
    guard let raw = nghttp2_session_get_stream_user_data(session, streamId) else { return nil }
    return Int(bitPattern: raw) - 1
}

@inline(__always) private func connection(_ user: UnsafeMutableRawPointer?) -> H2Connection? {
    user.map { Unmanaged<H2Connection>.fromOpaque($0).takeUnretainedValue() }
}

private let h2OnFrameRecv: nghttp2_on_frame_recv_callback = { session, frame, user in
    guard let frame, let conn = connection(user) else { return 0 }
    let hd = frame.pointee.hd
    switch UInt32(hd.type) {
    case NGHTTP2_SETTINGS.rawValue where hd.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) == 0:
        conn.settingsReceived = true
        let limit = nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS)
        conn.serverStreamLimit = Int(min(limit, UInt32(Int32.max)))
    case NGHTTP2_GOAWAY.rawValue:
        let goaway = frame.pointee.goaway
        conn.goawayLastStreamId = goaway.last_stream_id
        conn.draining = true
        var detail = String(cString: nghttp2_http2_strerror(goaway.error_code))
        if let data = goaway.opaque_data, goaway.opaque_data_len > 0 {
            detail += " " + String(decoding: UnsafeBufferPointer(start: data, count: min(goaway.opaque_data_len, 200)), as: UTF8.self)
        }
        conn.goawayDetail = detail
    case NGHTTP2_PING.rawValue where hd.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0:
        conn.pingSentAt = nil
    case NGHTTP2_HEADERS.rawValue, NGHTTP2_DATA.rawValue:
        if hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0, let index = h2RequestIndex(session, hd.stream_id) {
            conn.batch?.streamEnded(index, conn: conn, stream: hd.stream_id)
        }
    default:
        break
    }
    return 0
}

private let h2OnHeader: nghttp2_on_header_callback = { session, frame, name, nameLength, value, valueLength, _, user in
    guard let frame, let name, let value, let conn = connection(user), let batch = conn.batch,
          UInt32(frame.pointee.hd.type) == NGHTTP2_HEADERS.rawValue,
          let index = h2RequestIndex(session, frame.pointee.hd.stream_id) else { return 0 }
    batch.header(index, conn: conn, stream: frame.pointee.hd.stream_id,
                 name: UnsafeBufferPointer(start: name, count: nameLength),
                 value: UnsafeBufferPointer(start: value, count: valueLength))
    return 0
}

private let h2OnDataChunk: nghttp2_on_data_chunk_recv_callback = { session, _, streamId, data, length, user in
    guard let data, let conn = connection(user), let batch = conn.batch, let index = h2RequestIndex(session, streamId) else { return 0 }
    batch.bodyChunk(index, conn: conn, stream: streamId, UnsafeBufferPointer(start: data, count: length))
    return 0
}

private let h2OnStreamClose: nghttp2_on_stream_close_callback = { session, streamId, errorCode, user in
    guard let conn = connection(user), let index = h2RequestIndex(session, streamId) else { return 0 }
    conn.inFlight -= 1
    conn.answered = true
    conn.lastUsedAt = h2Millis()
    conn.batch?.streamClosed(index, conn: conn, stream: streamId, errorCode: errorCode)
    return 0
}

/// Copies request `index`'s body into nghttp2's frame buffer (flow control may ask for it in parts).
let h2ReadBody: nghttp2_data_source_read_callback = { session, streamId, buffer, length, flags, _, user in
    guard let buffer, let flags, let conn = connection(user), let batch = conn.batch,
          let index = h2RequestIndex(session, streamId) else {
        return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue)  // resets that stream only
    }
    let (count, done) = batch.readBody(index, conn: conn, stream: streamId, into: buffer, capacity: length)
    if done { flags.pointee |= UInt32(NGHTTP2_DATA_FLAG_EOF.rawValue) }
    return count
}
