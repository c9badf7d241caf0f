/// What a round trip was timed for, from a fixed set: go-redis and Lettuce
/// time commands by name, and a label per name a caller may send would
/// grow a metrics page without bound.
public enum RedisCommandKind: Int, Sendable, CaseIterable {
    case fcall, fcallReadOnly, wait, time, cluster, other

    /// The label's value: the command's name, in lower case.
    public var label: String {
        switch self {
        case .fcall: "fcall"
        case .fcallReadOnly: "fcall_ro"
        case .wait: "wait"
        case .time: "time"
        case .cluster: "cluster"
        case .other: "other"
        }
    }

    /// The kind of an encoded command, read from its name
    /// (`*<count>\r\n$<length>\r\n<name>\r\n…`), in any case. On every
    /// command's path: the name, up to 8 bytes, is read into one integer
    /// and compared with the known ones (no array, nothing retained).
    public init(encoded bytes: ArraySlice<UInt8>) {
        self = .other
        guard var index = bytes.firstIndex(of: 10).map({ $0 + 1 }), index < bytes.endIndex, bytes[index] == UInt8(ascii: "$") else {
            return
        }
        index += 1
        var length = 0
        while index < bytes.endIndex, (48...57).contains(bytes[index]), length < 100 {
            length = length * 10 + Int(bytes[index] - 48)
            index += 1
        }
        index += 2
        guard length <= 8, index + length <= bytes.endIndex else { return }
        var name: UInt64 = 0
        for byte in bytes[index..<(index + length)] {
            name = name << 8 | UInt64((97...122).contains(byte) ? byte - 32 : byte)
        }
        // The names' ASCII bytes, first byte highest.
        switch name {
        case 0x46_43_41_4C_4C: self = .fcall  // FCALL
        case 0x46_43_41_4C_4C_5F_52_4F: self = .fcallReadOnly  // FCALL_RO
        case 0x57_41_49_54: self = .wait  // WAIT
        case 0x54_49_4D_45: self = .time  // TIME
        case 0x43_4C_55_53_54_45_52: self = .cluster  // CLUSTER
        default: break
        }
    }
}
