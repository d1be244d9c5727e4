#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension String {
    /// Whether this string's UTF-8 form holds `byte` (e.g. 0 for a NUL, which PostgreSQL text
    /// cannot hold). One `memchr` over the contiguous UTF-8 storage of a native string: the generic
    /// `utf8.contains(_:)` walks the view byte by byte, about 29 instructions a byte, which on the
    /// record path's JSON text (600 bytes to 1.1 KB per delivery) was 20,000-35,000 instructions per
    /// delivery (callgrind, docs/bench.md "Issue 16's boundary"). A string without contiguous
    /// UTF-8 (bridged) is scanned the generic way.
    @inlinable
    public func containsUTF8Byte(_ byte: UInt8) -> Bool {
        if let found = utf8.withContiguousStorageIfAvailable({ buffer -> Bool in
            guard let base = buffer.baseAddress, !buffer.isEmpty else { return false }
            return memchr(base, Int32(byte), buffer.count) != nil
        }) {
            return found
        }
        return utf8.contains(byte)
    }
}
