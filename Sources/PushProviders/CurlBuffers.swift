/// A growable byte buffer in memory it owns (`deallocate()` frees it), for what libcurl reads from
/// a pointer while a transfer runs (header lines, request body) and for raw response headers.
/// `base` moves only when the buffer grows.
struct ByteBuffer {
    private(set) var base: UnsafeMutablePointer<UInt8>
    private(set) var capacity: Int
    /// Bytes in use; setting a smaller value forgets the rest (the memory is kept).
    var count = 0 {
        didSet { precondition(count >= 0 && count <= capacity, "ByteBuffer.count out of range") }
    }

    init(capacity: Int = 256) {
        self.capacity = max(16, capacity)
        base = .allocate(capacity: self.capacity)
    }

    func deallocate() { base.deallocate() }

    /// Makes room for `total` bytes in all (keeps the content).
    mutating func reserve(_ total: Int) {
        guard total > capacity else { return }
        let grown = max(total, capacity * 2)
        let fresh = UnsafeMutablePointer<UInt8>.allocate(capacity: grown)
        fresh.update(from: base, count: count)
        base.deallocate()
        base = fresh
        capacity = grown
    }

    mutating func append(_ byte: UInt8) {
        reserve(count + 1)
        base[count] = byte
        count += 1
    }

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard let start = bytes.baseAddress, !bytes.isEmpty else { return }
        reserve(count + bytes.count)
        (base + count).update(from: start.assumingMemoryBound(to: UInt8.self), count: bytes.count)
        count += bytes.count
    }

    mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    mutating func append(_ text: String) {
        var text = text
        text.withUTF8 { append(UnsafeRawBufferPointer($0)) }
    }

    /// The bytes in use (valid until the next change).
    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }
}

/// Response header bytes as libcurl hands them over, line by line (RFC 9110 field lines; HTTP/2
/// headers come lower-case already).
enum ResponseHeaderParser {
    /// The status code of a status line (`HTTP/2 200`, `HTTP/1.1 404 Not Found`); nil for any other line.
    static func statusCode(_ line: UnsafeRawBufferPointer) -> Int? {
        guard line.count >= 5, line[0] == UInt8(ascii: "H"), line[1] == UInt8(ascii: "T"), line[2] == UInt8(ascii: "T"),
              line[3] == UInt8(ascii: "P"), line[4] == UInt8(ascii: "/") else { return nil }
        var i = 5
        while i < line.count, line[i] != UInt8(ascii: " ") { i += 1 }
        while i < line.count, line[i] == UInt8(ascii: " ") { i += 1 }
        var code = 0, digits = 0
        while i < line.count, digits < 3, line[i] >= UInt8(ascii: "0"), line[i] <= UInt8(ascii: "9") {
            code = code * 10 + Int(line[i] - UInt8(ascii: "0"))
            i += 1
            digits += 1
        }
        return digits == 3 ? code : 0
    }

    /// `name: value` lines separated by `\n` → names lower-cased (ASCII), values without surrounding
    /// blanks or tabs; the first value of a repeated name wins; lines without a colon are skipped.
    static func parse(_ buffer: ByteBuffer) -> [String: String] {
        var headers: [String: String] = [:]
        let bytes = buffer.bytes
        var lineStart = 0
        while lineStart < bytes.count {
            var lineEnd = lineStart
            while lineEnd < bytes.count, bytes[lineEnd] != UInt8(ascii: "\n") { lineEnd += 1 }
            var colon = lineStart
            while colon < lineEnd, bytes[colon] != UInt8(ascii: ":") { colon += 1 }
            if colon < lineEnd, colon > lineStart {
                var name = [UInt8](UnsafeRawBufferPointer(rebasing: bytes[lineStart..<colon]))
                for k in name.indices where name[k] >= UInt8(ascii: "A") && name[k] <= UInt8(ascii: "Z") { name[k] += 32 }
                var vs = colon + 1, ve = lineEnd
                while vs < ve, bytes[vs] == UInt8(ascii: " ") || bytes[vs] == UInt8(ascii: "\t") { vs += 1 }
                while ve > vs, bytes[ve - 1] == UInt8(ascii: " ") || bytes[ve - 1] == UInt8(ascii: "\t") { ve -= 1 }
                let key = String(decoding: name, as: UTF8.self)
                if headers[key] == nil {
                    headers[key] = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[vs..<ve]), as: UTF8.self)
                }
            }
            lineStart = lineEnd + 1
        }
        return headers
    }
}
