// Ids and entity tags as bytes: every request's path and conditional
// headers are read here and every answer's tags written, without building
// a string. The one file in the core that works with pointers.

extension SessionID {
    /// Parses exactly 32 lowercase hex digits, not all zeros; anything else is no id.
    public init?(_ text: some StringProtocol) {
        var text = String(text)
        guard let id = text.withUTF8({ SessionID(utf8: $0) }) else { return nil }
        self = id
    }

    /// Parses exactly 32 lowercase hex digits, not all zeros, from UTF-8 bytes.
    public init?(utf8: UnsafeBufferPointer<UInt8>) {
        guard utf8.count == 32, let base = utf8.baseAddress,
              let high = Self.hexValue(base), let low = Self.hexValue(base + 16), high | low != 0 else { return nil }
        self.init(high: high, low: low)
    }

    /// Sixteen lowercase hex digits as a number; every request path with an
    /// id is read by this. A table, not comparisons: ids are random, so a
    /// branch on "digit or letter" would be mispredicted every other byte.
    private static func hexValue(_ digits: UnsafePointer<UInt8>) -> UInt64? {
        var value: UInt64 = 0, invalid: UInt8 = 0
        hexDigitValues.withUnsafeBufferPointer { table in
            for index in 0..<16 {
                let nibble = table[Int(digits[index])]
                invalid |= nibble
                value = value << 4 | UInt64(nibble & 0xF)
            }
        }
        return invalid & 0xF0 == 0 ? value : nil
    }

    /// Each byte's value as a lowercase hex digit; 0xFF for bytes that are not one.
    private static let hexDigitValues: [UInt8] = (0...255).map { byte in
        switch UInt8(byte) {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt8(byte) - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt8(byte) - UInt8(ascii: "a") + 10
        default: 0xFF
        }
    }

    public var description: String {
        String(unsafeUninitializedCapacity: 32) { buffer in
            writeHexDigits(to: buffer)
            return 32
        }
    }

    /// Writes the 32 hex digits at the start of `destination`.
    package func writeHexDigits(to destination: UnsafeMutableBufferPointer<UInt8>) {
        precondition(destination.count >= 32, "no room for an id")
        Self.writeHex(high, to: destination.baseAddress!)
        Self.writeHex(low, to: destination.baseAddress! + 16)
    }

    private static func writeHex(_ value: UInt64, to destination: UnsafeMutablePointer<UInt8>) {
        for index in 0..<16 {
            let nibble = UInt8(truncatingIfNeeded: value &>> UInt64(60 - 4 * index)) & 0xF
            destination[index] = nibble < 10 ? UInt8(ascii: "0") &+ nibble : UInt8(ascii: "a") &+ (nibble &- 10)
        }
    }
}

extension StateTag {
    /// Writes the twelve hex digits at `destination`.
    public func writeHex(to destination: UnsafeMutablePointer<UInt8>) {
        for index in 0..<Self.hexDigits {
            let nibble = UInt8(truncatingIfNeeded: bits &>> UInt64(44 - 4 * index)) & 0xF
            destination[index] = nibble < 10 ? UInt8(ascii: "0") &+ nibble : UInt8(ascii: "a") &+ (nibble &- 10)
        }
    }

    /// The twelve hex digits.
    public var hex: [UInt8] {
        [UInt8](unsafeUninitializedCapacity: Self.hexDigits) { buffer, initialized in
            writeHex(to: buffer.baseAddress!)
            initialized = Self.hexDigits
        }
    }
}

extension EntityTag {
    /// Writes the text at `start`; returns the index after it. `bytes` needs
    /// `maxLength` bytes from `start`.
    public func write(into bytes: UnsafeMutableBufferPointer<UInt8>, at start: Int) -> Int {
        var digits = 0
        var rest = version
        repeat {
            digits += 1
            rest /= 10
        } while rest > 0
        rest = version
        for index in stride(from: start + digits - 1, through: start, by: -1) {
            bytes[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10)
            rest /= 10
        }
        bytes[start + digits] = UInt8(ascii: ".")
        tag.writeHex(to: bytes.baseAddress! + start + digits + 1)
        return start + digits + 1 + StateTag.hexDigits
    }

    public var description: String {
        String(unsafeUninitializedCapacity: Self.maxLength) { buffer in
            write(into: buffer, at: 0)
        }
    }
}
