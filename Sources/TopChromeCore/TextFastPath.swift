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
    /// id is read by this. Eight bytes at a time: ids are random, so a branch
    /// per byte would be mispredicted every other byte, and even a table
    /// lookup per byte cost more than finding the session.
    private static func hexValue(_ digits: UnsafePointer<UInt8>) -> UInt64? {
        guard let high = hexValue(eightAt: UnsafeRawPointer(digits)),
              let low = hexValue(eightAt: UnsafeRawPointer(digits + 8)) else { return nil }
        return UInt64(high) << 32 | UInt64(low)
    }

    /// Eight lowercase hex digits, the first the most significant.
    @inline(__always)
    private static func hexValue(eightAt bytes: UnsafeRawPointer) -> UInt32? {
        let ones: UInt64 = 0x0101_0101_0101_0101, tops = ones &* 0x80
        let text = UInt64(littleEndian: bytes.loadUnaligned(as: UInt64.self))
        // Every byte below 0x80, so that no sum below carries into the next byte.
        guard text & tops == 0 else { return nil }
        // A byte's top bit after adding 0x80 - n is set when the byte is at least n.
        let digits = (text &+ ones &* (0x80 - 0x30)) & ~(text &+ ones &* (0x80 - 0x3A)) & tops
        let letters = (text &+ ones &* (0x80 - 0x61)) & ~(text &+ ones &* (0x80 - 0x67)) & tops
        guard digits | letters == tops else { return nil }
        // '0'...'9' end in their value, 'a'...'f' in it less 9. Then
        // neighbours pair up: nibbles into bytes, bytes into halves, halves into one.
        var value = (text & 0x0F0F_0F0F_0F0F_0F0F) &+ (letters >> 7) &* 9
        value = (value << 4 | value >> 8) & 0x00FF_00FF_00FF_00FF
        value = (value << 8 | value >> 16) & 0x0000_FFFF_0000_FFFF
        value = (value << 16 | value >> 32) & 0xFFFF_FFFF
        return UInt32(truncatingIfNeeded: value)
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
        let bytes = UnsafeMutableRawPointer(destination)
        bytes.storeBytes(of: hexDigits(UInt32(truncatingIfNeeded: value >> 32)).littleEndian, as: UInt64.self)
        bytes.storeBytes(of: hexDigits(UInt32(truncatingIfNeeded: value)).littleEndian, toByteOffset: 8, as: UInt64.self)
    }

    /// The eight lowercase hex digits of `value` as the bytes of a number
    /// to store little-endian (the first digit the lowest byte): every
    /// answer writes an id and a tag, and a branch per digit would be
    /// mispredicted every other digit.
    @inline(__always)
    static func hexDigits(_ value: UInt32) -> UInt64 {
        // Each nibble into a byte of its own, the last digit the lowest byte.
        var nibbles = UInt64(value)
        nibbles = (nibbles | nibbles << 16) & 0x0000_FFFF_0000_FFFF
        nibbles = (nibbles | nibbles << 8) & 0x00FF_00FF_00FF_00FF
        nibbles = (nibbles | nibbles << 4) & 0x0F0F_0F0F_0F0F_0F0F
        nibbles = nibbles.byteSwapped
        // A nibble of 10 or more is a letter: '0' + n, and 'a' - '0' - 10 = 39 more.
        let ones: UInt64 = 0x0101_0101_0101_0101
        let letters = ((nibbles &+ ones &* 6) >> 4) & ones
        return nibbles &+ ones &* 0x30 &+ letters &* 39
    }
}

extension StateTag {
    /// Writes the twelve hex digits at `destination`.
    public func writeHex(to destination: UnsafeMutablePointer<UInt8>) {
        // The first four digits, then the last eight over the four bytes after them.
        let bytes = UnsafeMutableRawPointer(destination)
        let first = SessionID.hexDigits(UInt32(truncatingIfNeeded: bits >> 32) << 16)
        bytes.storeBytes(of: UInt32(truncatingIfNeeded: first).littleEndian, as: UInt32.self)
        bytes.storeBytes(of: SessionID.hexDigits(UInt32(truncatingIfNeeded: bits)).littleEndian, toByteOffset: 4, as: UInt64.self)
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
