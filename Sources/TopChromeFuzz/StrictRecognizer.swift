import StrictJSON

/// An independent RFC 8259 recognizer (accept or reject, no values), written
/// from the grammar for the `json` target to compare `JSONReader` with.
/// It makes the same two choices `JSONReader` documents: containers nest at
/// most `JSONReader.maxDepth` deep, and a `\u` escape of a lone surrogate is
/// refused (RFC 8259 §8.2 leaves it open). And one I-JSON rule (RFC 7493
/// §2.3): no object repeats a member name, names compared after their
/// escapes are decoded (as Swift strings, so canonically equivalent names
/// are one name). Everything else is the grammar: UTF-8 only (no BOM), no
/// trailing data.
struct StrictRecognizer {
    private let bytes: [UInt8]
    private var index = 0

    static func accepts(_ bytes: [UInt8]) -> Bool {
        var recognizer = StrictRecognizer(bytes: bytes)
        recognizer.whitespace()
        guard recognizer.value(depth: 0) else { return false }
        recognizer.whitespace()
        return recognizer.index == bytes.count
    }

    private init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    private var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func take(_ byte: UInt8) -> Bool {
        guard peek == byte else { return false }
        index += 1
        return true
    }

    private mutating func whitespace() {
        while let byte = peek, [0x20, 0x09, 0x0A, 0x0D].contains(byte) { index += 1 }
    }

    private mutating func value(depth: Int) -> Bool {
        switch peek {
        case UInt8(ascii: "{"):
            guard depth < JSONReader.maxDepth else { return false }
            index += 1
            whitespace()
            if take(UInt8(ascii: "}")) { return true }
            var names: Set<String> = []
            repeat {
                whitespace()
                let start = index
                guard string(), names.insert(decoded(start..<index)).inserted else { return false }
                whitespace()
                guard take(UInt8(ascii: ":")) else { return false }
                whitespace()
                guard value(depth: depth + 1) else { return false }
                whitespace()
            } while take(UInt8(ascii: ","))
            return take(UInt8(ascii: "}"))
        case UInt8(ascii: "["):
            guard depth < JSONReader.maxDepth else { return false }
            index += 1
            whitespace()
            if take(UInt8(ascii: "]")) { return true }
            repeat {
                whitespace()
                guard value(depth: depth + 1) else { return false }
                whitespace()
            } while take(UInt8(ascii: ","))
            return take(UInt8(ascii: "]"))
        case UInt8(ascii: "\""): return string()
        case UInt8(ascii: "t"): return literal("true")
        case UInt8(ascii: "f"): return literal("false")
        case UInt8(ascii: "n"): return literal("null")
        default: return number()
        }
    }

    private mutating func literal(_ text: String) -> Bool {
        for byte in text.utf8 { guard take(byte) else { return false } }
        return true
    }

    private static func isDigit(_ byte: UInt8?) -> Bool {
        guard let byte else { return false }
        return byte >= 0x30 && byte <= 0x39
    }

    private mutating func digits() -> Int {
        var count = 0
        while Self.isDigit(peek) { index += 1; count += 1 }
        return count
    }

    /// number = [ minus ] int [ frac ] [ exp ]; int = zero / ( digit1-9 *DIGIT )
    private mutating func number() -> Bool {
        _ = take(UInt8(ascii: "-"))
        if take(UInt8(ascii: "0")) {
            // no leading zeros: the next byte must not be a digit (checked by the caller's trailing data)
        } else {
            guard let first = peek, first >= 0x31, first <= 0x39 else { return false }
            _ = digits()
        }
        if take(UInt8(ascii: ".")) { guard digits() > 0 else { return false } }
        if take(UInt8(ascii: "e")) || take(UInt8(ascii: "E")) {
            if !take(UInt8(ascii: "+")) { _ = take(UInt8(ascii: "-")) }
            guard digits() > 0 else { return false }
        }
        return true
    }

    private mutating func string() -> Bool {
        guard take(UInt8(ascii: "\"")) else { return false }
        while let byte = peek {
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return true
            case UInt8(ascii: "\\"):
                index += 1
                guard escape() else { return false }
            case 0x00..<0x20:
                return false
            case 0x20..<0x80:
                index += 1
            default:
                guard utf8Sequence() else { return false }
            }
        }
        return false
    }

    /// The text of the string literal at `range`, which `string()` accepted.
    private func decoded(_ range: Range<Int>) -> String {
        var utf8: [UInt8] = []
        var position = range.lowerBound + 1
        func unit(at offset: Int) -> UInt32 {
            UInt32(String(decoding: bytes[offset..<offset + 4], as: UTF8.self), radix: 16)!
        }
        while position < range.upperBound - 1 {
            let byte = bytes[position]
            guard byte == UInt8(ascii: "\\") else {
                utf8.append(byte)
                position += 1
                continue
            }
            let kind = bytes[position + 1]
            position += 2
            switch kind {
            case UInt8(ascii: "b"): utf8.append(0x08)
            case UInt8(ascii: "f"): utf8.append(0x0C)
            case UInt8(ascii: "n"): utf8.append(0x0A)
            case UInt8(ascii: "r"): utf8.append(0x0D)
            case UInt8(ascii: "t"): utf8.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = unit(at: position)
                position += 4
                if (0xD800...0xDBFF).contains(scalar) {
                    scalar = 0x10000 + (scalar - 0xD800) << 10 + (unit(at: position + 2) - 0xDC00)
                    position += 6
                }
                utf8.append(contentsOf: String(Character(Unicode.Scalar(scalar)!)).utf8)
            default: utf8.append(kind)  // \" \\ \/
            }
        }
        return String(decoding: utf8, as: UTF8.self)
    }

    private mutating func escape() -> Bool {
        guard let byte = peek else { return false }
        index += 1
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
             UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            return true
        case UInt8(ascii: "u"):
            guard let unit = hex4() else { return false }
            switch unit {
            case 0xD800...0xDBFF:
                guard take(UInt8(ascii: "\\")), take(UInt8(ascii: "u")), let low = hex4() else { return false }
                return (0xDC00...0xDFFF).contains(low)
            case 0xDC00...0xDFFF:
                return false
            default:
                return true
            }
        default:
            return false
        }
    }

    private mutating func hex4() -> UInt32? {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let byte = peek else { return nil }
            let nibble: UInt8
            switch byte {
            case 0x30...0x39: nibble = byte - 0x30
            case 0x41...0x46: nibble = byte - 0x41 + 10
            case 0x61...0x66: nibble = byte - 0x61 + 10
            default: return nil
            }
            value = value << 4 | UInt32(nibble)
            index += 1
        }
        return value
    }

    /// One well-formed UTF-8 sequence of two to four bytes (Unicode Table 3-7):
    /// no overlong forms, no surrogates, nothing above U+10FFFF.
    private mutating func utf8Sequence() -> Bool {
        guard let lead = peek else { return false }
        let length: Int
        var lower: UInt8 = 0x80, upper: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; lower = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; upper = 0x9F
        case 0xF0: length = 4; lower = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; upper = 0x8F
        default: return false
        }
        index += 1
        for position in 1..<length {
            guard let byte = peek else { return false }
            let (low, high) = position == 1 ? (lower, upper) : (UInt8(0x80), UInt8(0xBF))
            guard byte >= low, byte <= high else { return false }
            index += 1
        }
        return true
    }
}
