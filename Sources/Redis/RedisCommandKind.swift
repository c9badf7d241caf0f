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

    private static let names: [(RedisCommandKind, [UInt8])] = [
        (.fcall, Array("FCALL".utf8)), (.fcallReadOnly, Array("FCALL_RO".utf8)), (.wait, Array("WAIT".utf8)),
        (.time, Array("TIME".utf8)), (.cluster, Array("CLUSTER".utf8)),
    ]

    /// The kind of an encoded command, read from its name
    /// (`*<count>\r\n$<length>\r\n<name>\r\n…`), in any case.
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
        let name = bytes[index..<(index + length)]
        for (kind, known) in Self.names where known.count == length
            && zip(name, known).allSatisfy({ $0 == $1 || ($0 >= 97 && $0 <= 122 && $0 - 32 == $1) }) {
            self = kind
            return
        }
    }
}
