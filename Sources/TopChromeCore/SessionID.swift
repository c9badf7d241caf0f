/// A session's id: 128 bits from the system's cryptographic random source.
///
/// Whoever knows an id can read and change that session, so an id must not be
/// guessable; it is written as 32 lowercase hex digits, which are URL-safe.
///
/// The all-zero id is no id: it is never drawn, never parsed, and so never
/// reaches the store from a request or a state file. A value anyone can
/// write down without knowing a session is exactly what an id must not be;
/// and refusing it everywhere keeps it from ever naming a real session.
public struct SessionID: Sendable, Hashable, CustomStringConvertible {
    public let high: UInt64
    public let low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// A fresh id. `SystemRandomNumberGenerator` reads the kernel's CSPRNG
    /// (getrandom). Never the all-zero id, which parsing refuses: a session
    /// that had it could be neither reached nor restored. Drawing it is a
    /// one-in-2^128 event, so the loop practically never repeats.
    public static func random() -> SessionID {
        var generator = SystemRandomNumberGenerator()
        while true {
            let id = SessionID(high: generator.next(), low: generator.next())
            if !id.isZero { return id }
        }
    }

    private var isZero: Bool { high | low == 0 }

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
