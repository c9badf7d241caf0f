/// The URL-safe base64 of JWS (RFC 7515 §2, RFC 4648 §5): no padding, and
/// only the canonical spelling of each value is read, so that one token has
/// one form (a cache keyed by the token's bytes cannot be fooled by a twin).
public enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (value, symbol) in alphabet.enumerated() { table[Int(symbol)] = UInt8(value) }
        return table
    }()

    public static func decode(_ text: some Collection<UInt8>) -> [UInt8]? {
        guard text.count % 4 != 1 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for symbol in text {
            let value = values[Int(symbol)]
            guard value != 0xFF else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                bytes.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        // Leftover bits must be zero: "AB" and "AC" would otherwise both mean one byte.
        guard accumulator == 0 else { return nil }
        return bytes
    }

    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        var symbols: [UInt8] = []
        symbols.reserveCapacity((bytes.count * 4 + 2) / 3)
        var accumulator: UInt32 = 0
        var bits = 0
        for byte in bytes {
            accumulator = accumulator << 8 | UInt32(byte)
            bits += 8
            while bits >= 6 {
                bits -= 6
                symbols.append(alphabet[Int(accumulator >> UInt32(bits) & 63)])
            }
        }
        if bits > 0 { symbols.append(alphabet[Int(accumulator << UInt32(6 - bits) & 63)]) }
        return String(decoding: symbols, as: UTF8.self)
    }
}
