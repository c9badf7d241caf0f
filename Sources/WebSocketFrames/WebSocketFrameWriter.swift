/// Frames as bytes. The server's frames are unmasked (§5.1); a mask is for
/// a client's frames (tests, the fuzz target).
public enum WebSocketFrameWriter {
    public static func frame(_ opcode: WebSocketOpcode, _ payload: some Collection<UInt8>, fin: Bool = true,
                             mask: (UInt8, UInt8, UInt8, UInt8)? = nil) -> [UInt8] {
        var bytes: [UInt8] = [(fin ? 0x80 : 0) | opcode.rawValue]
        bytes.reserveCapacity(payload.count + 14)
        let maskBit: UInt8 = mask == nil ? 0 : 0x80
        switch payload.count {
        case ..<126:
            bytes.append(maskBit | UInt8(payload.count))
        case ...0xFFFF:
            bytes.append(maskBit | 126)
            bytes += [UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        default:
            bytes.append(maskBit | 127)
            bytes += (0..<8).reversed().map { UInt8(truncatingIfNeeded: UInt64(payload.count) >> ($0 * 8)) }
        }
        guard let mask else { return bytes + payload }
        let key = [mask.0, mask.1, mask.2, mask.3]
        bytes += key
        bytes += payload.enumerated().map { $0.element ^ key[$0.offset & 3] }
        return bytes
    }

    public static func text(_ text: String) -> [UInt8] { frame(.text, Array(text.utf8)) }

    /// A close frame; the reason is cut to fit a control frame's 125 bytes
    /// on a character boundary.
    public static func close(_ code: WebSocketCloseCode, reason: String = "") -> [UInt8] {
        var reasonBytes: [UInt8] = []
        for character in reason {
            let next = Array(character.utf8)
            guard reasonBytes.count + next.count <= 123 else { break }
            reasonBytes += next
        }
        return frame(.close, [UInt8(code.rawValue >> 8), UInt8(code.rawValue & 0xFF)] + reasonBytes)
    }
}
