/// The SMS fallback's phone number and text as acceptance and the providers see them (R-SMS-1):
/// the E.164 form of the number, the bound of the text and how many segments it takes.
/// Pure: no I/O.
public enum SMSText {
    /// Characters of a text at most (Twilio's Messages resource takes a `Body` of up to 1,600
    /// characters), counted as PostgreSQL's `char_length` counts them (Unicode scalars).
    public static let maxTextCharacters = 1_600

    /// True when `phone` is an E.164 number (ITU-T E.164 as Twilio's Messages resource takes `To`):
    /// `+`, then 8 to 15 ASCII digits, the first not 0 (a country code never starts with 0).
    /// Nothing else: no spaces, dashes, parentheses or letters.
    public static func isE164(_ phone: String) -> Bool {
        let bytes = Array(phone.utf8)
        guard bytes.count >= 9, bytes.count <= 16, bytes[0] == UInt8(ascii: "+") else { return false }
        let digits = bytes.dropFirst()
        guard digits.first != UInt8(ascii: "0") else { return false }
        return digits.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }

    /// Why `text` cannot be an SMS text, or nil: it must hold 1 to `maxTextCharacters` characters
    /// and no NUL (which PostgreSQL cannot store).
    public static func textProblem(_ text: String) -> String? {
        let n = text.unicodeScalars.count
        if n < 1 || n > maxTextCharacters || text.utf8.contains(0) {
            return "must be 1 to \(maxTextCharacters) characters, without NUL"
        }
        return nil
    }
}

/// The character set an SMS travels in (3GPP TS 23.038): GSM 7-bit when every character is in
/// the GSM default alphabet or its extension table, UCS-2 (UTF-16) otherwise.
public enum SMSEncoding: String, Sendable, Hashable, CaseIterable, Codable {
    /// GSM 03.38 default alphabet: 160 septets in one SMS, 153 per part of a concatenated one.
    case gsm7 = "GSM-7"
    /// UCS-2 / UTF-16: 70 code units in one SMS, 67 per part of a concatenated one.
    case ucs2 = "UCS-2"
}

/// How an SMS text splits into segments (3GPP TS 23.038 alphabets, TS 23.040 concatenation: a
/// 6-byte user data header per part leaves 153 septets or 67 UTF-16 units). A character of the
/// GSM extension table (`^ { } \ [ ~ ] | €`, form feed) takes two septets (escape + code) and
/// is never split across parts; neither is a UTF-16 surrogate pair. Twilio bills per segment.
public struct SMSSegments: Sendable, Hashable, Codable {
    /// The character set.
    public let encoding: SMSEncoding
    /// Segments (SMS parts) the text takes; 0 only for the empty text.
    public let count: Int
    /// Septets (GSM-7) or UTF-16 code units (UCS-2) of the whole text.
    public let units: Int

    /// A measure from its parts (tests compare with it).
    init(encoding: SMSEncoding, count: Int, units: Int) {
        self.encoding = encoding
        self.count = count
        self.units = units
    }

    /// Measures `text`.
    public init(_ text: String) {
        var septets: [Int] = []
        septets.reserveCapacity(text.unicodeScalars.count)
        var gsm = true
        for scalar in text.unicodeScalars {
            if Self.basic.contains(scalar.value) {
                septets.append(1)
            } else if Self.extended.contains(scalar.value) {
                septets.append(2)
            } else {
                gsm = false
                break
            }
        }
        if gsm {
            encoding = .gsm7
            (count, units) = Self.split(septets, single: 160, part: 153)
        } else {
            encoding = .ucs2
            (count, units) = Self.split(text.unicodeScalars.map { $0.value > 0xFFFF ? 2 : 1 }, single: 70, part: 67)
        }
    }

    /// Parts for characters of the given widths: one part when the total fits `single`, else
    /// parts of at most `part` units filled in order, a character never split.
    static func split(_ widths: [Int], single: Int, part: Int) -> (count: Int, units: Int) {
        let total = widths.reduce(0, +)
        if total == 0 { return (0, 0) }
        if total <= single { return (1, total) }
        var parts = 1, used = 0
        for w in widths {
            if used + w > part {
                parts += 1
                used = 0
            }
            used += w
        }
        return (parts, total)
    }

    /// The GSM 03.38 default alphabet (one septet each), as Unicode scalars.
    static let basic: Set<UInt32> = {
        var set = Set<UInt32>()
        let table: [UInt32] = [
            0x40, 0xA3, 0x24, 0xA5, 0xE8, 0xE9, 0xF9, 0xEC, 0xF2, 0xC7, 0x0A, 0xD8, 0xF8, 0x0D, 0xC5, 0xE5,
            0x394, 0x5F, 0x3A6, 0x393, 0x39B, 0x3A9, 0x3A0, 0x3A8, 0x3A3, 0x398, 0x39E, 0xC6, 0xE6, 0xDF, 0xC9,
            0x20, 0x21, 0x22, 0x23, 0xA4, 0x25, 0x26, 0x27, 0x28, 0x29, 0x2A, 0x2B, 0x2C, 0x2D, 0x2E, 0x2F,
            0xA1, 0xC4, 0xD6, 0xD1, 0xDC, 0xA7, 0xBF, 0xE4, 0xF6, 0xF1, 0xFC, 0xE0,
        ]
        set.formUnion(table)
        set.formUnion(0x30...0x3F)   // 0-9 : ; < = > ?
        set.formUnion(0x41...0x5A)   // A-Z
        set.formUnion(0x61...0x7A)   // a-z
        return set
    }()

    /// The GSM 03.38 extension table (escape + code: two septets each).
    static let extended: Set<UInt32> = [0x0C, 0x5E, 0x7B, 0x7D, 0x5C, 0x5B, 0x7E, 0x5D, 0x7C, 0x20AC]
}
