import Foundation
import PushCore

/// The SQL functions' refusals as `PushError` values: a function raises `CODE: message` (SQLSTATE
/// P0001) with the request field, when there is one, as the error's column name (sql/0006).
public enum StoreErrors {
    /// The `PushError` a SQL function's refusal stands for (its code, its message after the code,
    /// its field), or nil for any other error (a database failure).
    public static func domainError(_ e: PGError) -> PushError? {
        guard e.sqlState == "P0001", let colon = e.message.firstIndex(of: ":") else { return nil }
        let word = String(e.message[..<colon]).trimmingCharacters(in: .whitespaces)
        let rest = String(e.message[e.message.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
        guard let code = ErrorCode(rawValue: word) else { return nil }
        return PushError(code, rest, field: e.column)
    }

    /// Runs `body`, rethrowing a SQL function's refusal as its `PushError` (other errors unchanged).
    static func mapped<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let e as PGError {
            if let domain = domainError(e) { throw domain }
            throw e
        }
    }
}
