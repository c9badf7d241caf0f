/// One reply from Redis, as RESP2 carries it.
///
/// hiredis 0.14 reads a null bulk string (`$-1`) and a null array (`*-1`)
/// alike, so both arrive as `.null`: RESP2 commands use them for the same
/// thing, "no value".
public enum RESPValue: Sendable, Hashable {
    /// A status reply such as `OK` or `PONG`.
    case simple(String)
    /// An error reply, kept as a value: whether it is a failure is the
    /// command's business (a cluster redirection is handled before it gets here).
    case error(String)
    case integer(Int64)
    case bulk([UInt8])
    case array([RESPValue])
    case null

    /// The text of a status reply, or a bulk string read as UTF-8.
    public var string: String? {
        switch self {
        case .simple(let text): text
        case .bulk(let bytes): String(decoding: bytes, as: UTF8.self)
        default: nil
        }
    }
}
