/// SHA-1 (FIPS 180-4), only for the handshake's accept value, where the
/// protocol fixes it (it protects nothing): in Swift so this target stays
/// free of C and links into the fuzz binary and the tests as it is.
enum SHA1 {
    static func digest(_ message: [UInt8]) -> [UInt8] {
        var h: [UInt32] = [0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0]
        var padded = message + [0x80]
        while padded.count % 64 != 56 { padded.append(0) }
        let bits = UInt64(message.count) * 8
        padded += (0..<8).reversed().map { UInt8(truncatingIfNeeded: bits >> ($0 * 8)) }
        var w = [UInt32](repeating: 0, count: 80)
        for block in stride(from: 0, to: padded.count, by: 64) {
            for t in 0..<16 {
                w[t] = (0..<4).reduce(0) { $0 << 8 | UInt32(padded[block + t * 4 + $1]) }
            }
            for t in 16..<80 { w[t] = rotate(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1) }
            var (a, b, c, d, e) = (h[0], h[1], h[2], h[3], h[4])
            for t in 0..<80 {
                let (f, k): (UInt32, UInt32) = switch t {
                case ..<20: ((b & c) | (~b & d), 0x5A82_7999)
                case ..<40: (b ^ c ^ d, 0x6ED9_EBA1)
                case ..<60: ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC)
                default: (b ^ c ^ d, 0xCA62_C1D6)
                }
                let temp = rotate(a, 5) &+ f &+ e &+ k &+ w[t]
                (e, d, c, b, a) = (d, c, rotate(b, 30), a, temp)
            }
            h[0] &+= a; h[1] &+= b; h[2] &+= c; h[3] &+= d; h[4] &+= e
        }
        return h.flatMap { word in (0..<4).reversed().map { UInt8(truncatingIfNeeded: word >> ($0 * 8)) } }
    }

    private static func rotate(_ value: UInt32, _ by: UInt32) -> UInt32 { value << by | value >> (32 - by) }
}

/// Standard base64 with padding (RFC 4648 §4), encoding only.
enum Base64 {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        for index in stride(from: 0, to: bytes.count, by: 3) {
            let chunk = bytes[index..<min(index + 3, bytes.count)]
            let value = chunk.enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (16 - 8 * UInt32($1.offset)) }
            for position in 0..<4 {
                out.append(position <= chunk.count ? alphabet[Int(value >> (18 - 6 * UInt32(position)) & 0x3F)] : UInt8(ascii: "="))
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
