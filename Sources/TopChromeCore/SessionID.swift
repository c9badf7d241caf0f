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
        var text = String(text)
        guard let id = text.withUTF8({ SessionID(utf8: $0) }) else { return nil }
        self = id
    }

    /// Parses exactly 32 lowercase hex digits from UTF-8 bytes.
    public init?(utf8: UnsafeBufferPointer<UInt8>) {
        guard utf8.count == 32 else { return nil }
        var high: UInt64 = 0, low: UInt64 = 0
        for index in 0..<32 {
            let byte = utf8[index]
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
        String(unsafeUninitializedCapacity: 32) { buffer in
            Self.writeHex(high, into: buffer, at: 0)
            Self.writeHex(low, into: buffer, at: 16)
            return 32
        }
    }

    /// The 32 hex digits, lent without making a String.
    public func withHexDigits<Result>(_ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows -> Result {
        try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { buffer in
            Self.writeHex(high, into: buffer, at: 0)
            Self.writeHex(low, into: buffer, at: 16)
            return try body(UnsafeBufferPointer(buffer))
        }
    }

    private static func writeHex(_ value: UInt64, into buffer: UnsafeMutableBufferPointer<UInt8>, at offset: Int) {
        let digits: StaticString = "0123456789abcdef"
        for index in 0..<16 {
            let nibble = Int(truncatingIfNeeded: value >> UInt64(60 - 4 * index)) & 0xF
            buffer[offset + index] = digits.utf8Start[nibble]
        }
    }
}
