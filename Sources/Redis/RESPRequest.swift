/// A command encoded as RESP (an array of bulk strings), ready to append to
/// a connection's output buffer.
///
/// Encoded here rather than by `redisAppendCommandArgv` so that callers do
/// the work on their own thread, outside the connection's lock, and the lock
/// is held only for hiredis's copy of the finished bytes.
struct RESPRequest: Sendable {
    let bytes: [UInt8]

    init(_ arguments: [[UInt8]]) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(arguments.reduce(16) { $0 + $1.count + 16 })
        bytes.append(UInt8(ascii: "*"))
        bytes.append(contentsOf: String(arguments.count).utf8)
        bytes.append(contentsOf: [13, 10])
        for argument in arguments {
            bytes.append(UInt8(ascii: "$"))
            bytes.append(contentsOf: String(argument.count).utf8)
            bytes.append(contentsOf: [13, 10])
            bytes.append(contentsOf: argument)
            bytes.append(contentsOf: [13, 10])
        }
        self.bytes = bytes
    }

    init(_ arguments: [String]) {
        self.init(arguments.map { Array($0.utf8) })
    }
}
