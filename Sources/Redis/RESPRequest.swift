/// A command encoded as RESP (an array of bulk strings), ready to append to
/// a connection's output buffer.
///
/// Encoded here rather than by `redisAppendCommandArgv` so that callers do
/// the work on their own thread, outside the connection's lock, and the lock
/// is held only to copy the finished bytes.
public struct RESPRequest: Sendable {
    /// What goes on the wire.
    public let bytes: [UInt8]

    init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    public init(_ arguments: [[UInt8]]) {
        var builder = RESPRequestBuilder(capacity: arguments.reduce(0) { $0 + $1.count + 16 })
        for argument in arguments { builder.append(argument) }
        self = builder.request
    }

    public init(_ arguments: [String]) {
        self.init(arguments.map { Array($0.utf8) })
    }
}

/// Writes a command's arguments straight into their encoding: for a
/// command sent on every request, where an array per argument (and a
/// `String` per length) cost more than the call to Redis itself.
public struct RESPRequestBuilder: Sendable {
    /// The bulk strings; the array's header, which needs their count, comes at the end.
    private var body: [UInt8] = []
    private var count = 0

    /// `capacity`: the bytes the arguments are expected to take, with their framing.
    public init(capacity: Int = 256) {
        body.reserveCapacity(capacity)
    }

    public mutating func append(_ argument: [UInt8]) {
        appendLength(argument.count)
        body.append(contentsOf: argument)
        body.append(13)
        body.append(10)
    }

    /// The number in decimal, as Redis reads integers.
    public mutating func append(_ number: UInt64) {
        var length = 1, rest = number
        while rest >= 10 {
            length += 1
            rest /= 10
        }
        appendLength(length)
        Self.appendDecimal(number, to: &body)
        body.append(13)
        body.append(10)
    }

    /// The shortest text that reads back as the same double (`description`).
    public mutating func append(_ number: Double) {
        var text = number.description
        text.withUTF8 { utf8 in
            appendLength(utf8.count)
            body.append(contentsOf: utf8)
        }
        body.append(13)
        body.append(10)
    }

    public var request: RESPRequest {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(body.count + 12)
        bytes.append(UInt8(ascii: "*"))
        Self.appendDecimal(UInt64(count), to: &bytes)
        bytes.append(13)
        bytes.append(10)
        bytes.append(contentsOf: body)
        return RESPRequest(bytes: bytes)
    }

    private mutating func appendLength(_ length: Int) {
        count += 1
        body.append(UInt8(ascii: "$"))
        Self.appendDecimal(UInt64(length), to: &body)
        body.append(13)
        body.append(10)
    }

    /// Most numbers here are lengths of one or two digits: those are written
    /// without a division's loop. Longer ones (deadlines, seqs) are written
    /// into room made for all their digits at once, last digit first.
    private static func appendDecimal(_ number: UInt64, to bytes: inout [UInt8]) {
        if number < 10 {
            bytes.append(UInt8(ascii: "0") + UInt8(number))
            return
        }
        if number < 100 {
            bytes.append(UInt8(ascii: "0") + UInt8(number / 10))
            bytes.append(UInt8(ascii: "0") + UInt8(number % 10))
            return
        }
        var digits = 0, rest = number
        while rest > 0 {
            digits += 1
            rest /= 10
        }
        bytes.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: digits))
        var index = bytes.count
        rest = number
        while rest > 0 {
            index -= 1
            bytes[index] = UInt8(ascii: "0") + UInt8(rest % 10)
            rest /= 10
        }
    }
}
