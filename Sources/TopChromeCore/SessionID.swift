/// A session's id: 128 bits from the system's cryptographic random source.
///
/// Whoever knows an id can read and change that session, so an id must not be
/// guessable; it is written as 32 lowercase hex digits, which are URL-safe.
public struct SessionID: Sendable, Hashable, CustomStringConvertible {
    public let high: UInt64
    public let low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// A fresh id. `SystemRandomNumberGenerator` reads the kernel's CSPRNG (getrandom).
    public static func random() -> SessionID {
        var generator = SystemRandomNumberGenerator()
        return SessionID(high: generator.next(), low: generator.next())
    }

    /// Parses exactly 32 lowercase hex digits; anything else is no id.
    public init?(_ text: some StringProtocol) {
        let utf8 = text.utf8
        guard utf8.count == 32 else { return nil }
        var high: UInt64 = 0, low: UInt64 = 0
        for (index, byte) in utf8.enumerated() {
            let nibble: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = byte &- UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = byte &- UInt8(ascii: "a") &+ 10
            default: return nil
            }
            if index < 16 { high = high << 4 | UInt64(nibble) } else { low = low << 4 | UInt64(nibble) }
        }
        self.init(high: high, low: low)
    }

    public var description: String {
        Self.hex(high) + Self.hex(low)
    }

    private static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
