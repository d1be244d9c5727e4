import Foundation
internal import COpenSSL

/// The OpenSSL 3.0 client context of an `NGHTTP2Client`: TLS 1.2 or later, ALPN `h2` only, peer
/// verification against `caFile` or the system store (`SSL_CTX_set_default_verify_paths`, which also
/// honours `SSL_CERT_FILE` / `SSL_CERT_DIR`). Verification is never switched off; the host name is
/// checked per connection (`H2TLSSession`).
final class H2TLSContext {
    let context: OpaquePointer

    /// - Throws: `HTTPClientError.caFileUnreadable`, `.caFileInvalid`, `.tlsInit`.
    init(caFile: String?) throws {
        if let ca = caFile, !FileManager.default.isReadableFile(atPath: ca) { throw HTTPClientError.caFileUnreadable(ca) }
        guard let ctx = SSL_CTX_new(TLS_client_method()) else { throw HTTPClientError.tlsInit("SSL_CTX_new: \(H2TLSContext.lastError())") }
        context = ctx
        SSL_CTX_ctrl(ctx, SSL_CTRL_SET_MIN_PROTO_VERSION, Int(TLS1_2_VERSION), nil)
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nil)
        if let ca = caFile {
            guard SSL_CTX_load_verify_locations(ctx, ca, nil) == 1 else {
                throw HTTPClientError.caFileInvalid(ca, H2TLSContext.lastError())
            }
        } else if SSL_CTX_set_default_verify_paths(ctx) != 1 {
            throw HTTPClientError.tlsInit("system CA store: \(H2TLSContext.lastError())")
        }
        let alpn: [UInt8] = [2, UInt8(ascii: "h"), UInt8(ascii: "2")]
        guard SSL_CTX_set_alpn_protos(ctx, alpn, UInt32(alpn.count)) == 0 else {
            throw HTTPClientError.tlsInit("ALPN: \(H2TLSContext.lastError())")
        }
    }

    deinit { SSL_CTX_free(context) }

    /// The oldest error of this thread's OpenSSL queue as text (the queue is emptied).
    static func lastError() -> String {
        let code = ERR_get_error()
        ERR_clear_error()
        guard code != 0 else { return "no OpenSSL error queued" }
        var text = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &text, text.count)
        return String(cString: text)
    }
}

/// One connection's TLS state over memory BIOs: the connection moves bytes between its socket and
/// the BIOs itself (`recv` into `feed`, `drain` into its `send` buffer, with MSG_NOSIGNAL, so a
/// closed peer never raises SIGPIPE), and every TLS record of a round leaves in one `send`.
final class H2TLSSession {
    let ssl: OpaquePointer
    private let input: OpaquePointer
    private let output: OpaquePointer

    /// What a TLS call asks for next.
    enum Step: Equatable {
        case done
        case wantRead
        case closed
        case failed(String)
    }

    /// - Parameters: `host`: the URL's host (an IP literal is checked against the certificate's IP
    ///   addresses, a name against its DNS names and sent as SNI).
    init(context: H2TLSContext, host: String, isIPLiteral: Bool) throws {
        guard let ssl = SSL_new(context.context), let input = BIO_new(BIO_s_mem()), let output = BIO_new(BIO_s_mem()) else {
            throw HTTPClientError.tlsInit("SSL_new: \(H2TLSContext.lastError())")
        }
        // An empty memory BIO asks for a retry instead of reporting the end of the stream.
        BIO_ctrl(input, BIO_C_SET_BUF_MEM_EOF_RETURN, -1, nil)
        BIO_ctrl(output, BIO_C_SET_BUF_MEM_EOF_RETURN, -1, nil)
        SSL_set_bio(ssl, input, output)  // the SSL object owns both BIOs from here
        self.ssl = ssl
        self.input = input
        self.output = output
        let param = SSL_get0_param(ssl)
        X509_VERIFY_PARAM_set_hostflags(param, UInt32(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS))
        let hostOK: Bool
        if isIPLiteral {
            hostOK = X509_VERIFY_PARAM_set1_ip_asc(param, host) == 1
        } else {
            // SNI: OpenSSL copies the name.
            hostOK = SSL_set1_host(ssl, host) == 1 && host.withCString {
                SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, Int(TLSEXT_NAMETYPE_host_name), UnsafeMutableRawPointer(mutating: $0)) == 1
            }
        }
        guard hostOK else { throw HTTPClientError.tlsInit("host name check for \(host): \(H2TLSContext.lastError())") }
        SSL_set_connect_state(ssl)
    }

    deinit { SSL_free(ssl) }

    /// Hands bytes read from the socket to TLS.
    func feed(_ bytes: UnsafeRawPointer, _ count: Int) {
        _ = BIO_write(input, bytes, Int32(count))
    }

    /// TLS bytes waiting to be sent.
    var pendingOutput: Int { Int(BIO_ctrl_pending(output)) }

    /// Moves the TLS bytes waiting to be sent into `buffer`.
    func drain(into buffer: inout ByteBuffer) {
        let n = pendingOutput
        guard n > 0 else { return }
        buffer.reserve(buffer.count + n)
        let read = BIO_read(output, buffer.base + buffer.count, Int32(n))
        if read > 0 { buffer.count += Int(read) }
    }

    /// Advances the handshake; `.done` once it finished with a verified certificate and ALPN `h2`.
    func handshake() -> Step {
        ERR_clear_error()
        let r = SSL_do_handshake(ssl)
        if r == 1 {
            var proto: UnsafePointer<UInt8>?
            var length: UInt32 = 0
            SSL_get0_alpn_selected(ssl, &proto, &length)
            guard length == 2, let p = proto, p[0] == UInt8(ascii: "h"), p[1] == UInt8(ascii: "2") else {
                return .failed("TLS: the server did not select HTTP/2 (ALPN h2)")
            }
            return .done
        }
        let step = classify(r, what: "TLS handshake")
        if case .failed(let why) = step {
            let verify = SSL_get_verify_result(ssl)
            if verify != X509_V_OK { return .failed("TLS: certificate not verified: \(String(cString: X509_verify_cert_error_string(verify)))") }
            return .failed(why)
        }
        return step == .closed ? .failed("TLS handshake: connection closed by the server") : step
    }

    /// Decrypts into `buffer` (capacity `capacity`): the byte count (> 0), or 0 with the step that stopped it.
    func read(into buffer: UnsafeMutableRawPointer, capacity: Int) -> (Int, Step) {
        ERR_clear_error()
        let n = SSL_read(ssl, buffer, Int32(capacity))
        if n > 0 { return (Int(n), .done) }
        return (0, classify(n, what: "TLS read"))
    }

    /// Encrypts `count` bytes into the output BIO (a memory BIO takes them all).
    func write(_ bytes: UnsafeRawPointer, _ count: Int) -> Step {
        ERR_clear_error()
        let n = SSL_write(ssl, bytes, Int32(count))
        return n == Int32(count) ? .done : classify(n, what: "TLS write")
    }

    /// Queues a close_notify alert (sent with the next drain).
    func shutdown() {
        ERR_clear_error()
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
    }

    private func classify(_ result: Int32, what: String) -> Step {
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE: return .wantRead
        case SSL_ERROR_ZERO_RETURN: return .closed
        default: return .failed("\(what): \(H2TLSContext.lastError())")
        }
    }
}
