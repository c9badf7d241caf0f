/// The Redis Cluster slot of a key: CRC16 (XMODEM) of the key, or of its
/// hash tag, modulo 16384. A hash tag is the part between the first `{` and
/// the next `}`, when not empty; it lets related keys share a slot, hence a
/// node, so that one command or function can touch them all.
public enum HashSlot {
    public static let count = 16384

    public static func of(_ key: some Collection<UInt8>) -> Int {
        Int(crc16(hashTag(of: key)) & 0x3FFF)
    }

    public static func of(_ key: String) -> Int {
        of(Array(key.utf8))
    }

    /// The same for a key's bytes, compiled here: callers in other modules
    /// would otherwise run the generic form, a call per byte.
    public static func of(_ key: [UInt8]) -> Int {
        Int(crc16(hashTag(of: key)) & 0x3FFF)
    }

    static func hashTag<Key: Collection<UInt8>>(of key: Key) -> Key.SubSequence {
        guard let open = key.firstIndex(of: UInt8(ascii: "{")) else { return key[...] }
        let afterOpen = key.index(after: open)
        guard let close = key[afterOpen...].firstIndex(of: UInt8(ascii: "}")), close != afterOpen else { return key[...] }
        return key[afterOpen..<close]
    }

    /// CRC-16/XMODEM (polynomial 0x1021, initial value 0), as the cluster
    /// specification defines it; a byte at a time from a table, since every
    /// command sent to a cluster computes one.
    public static func crc16(_ bytes: some Sequence<UInt8>) -> UInt16 {
        var crc: UInt16 = 0
        for byte in bytes {
            crc = (crc << 8) ^ crcTable[Int(UInt8(truncatingIfNeeded: crc >> 8) ^ byte)]
        }
        return crc
    }

    /// The CRC of each byte value alone, bit by bit.
    private static let crcTable: [UInt16] = (0..<256).map { (byte: Int) -> UInt16 in
        var crc = UInt16(byte) << 8
        for _ in 0..<8 {
            crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1
        }
        return crc
    }
}
