/// A command encoded as RESP (an array of bulk strings), ready to append to
/// a connection's output buffer.
///
/// Encoded here rather than by `redisAppendCommandArgv` so that callers do
/// the work on their own thread, outside the connection's lock, and the lock
/// is held only to copy the finished bytes.
public struct RESPRequest: Sendable {
    /// What goes on the wire.
    public let bytes: ArraySlice<UInt8>

    init(bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
    }

    public init(_ arguments: [[UInt8]]) {
        var builder = RESPRequestBuilder(capacity: arguments.reduce(0) { $0 + $1.count + 16 })
        for argument in arguments { builder.append(argument) }
        self = builder.take()
    }

    public init(_ arguments: [String]) {
        self.init(arguments.map { Array($0.utf8) })
    }
}

/// Writes a command's arguments straight into their encoding: for a
/// command sent on every request, where an array per argument (and a
/// `String` per length) cost more than the call to Redis itself.
public struct RESPRequestBuilder: Sendable {
    /// The bulk strings, after room for the array's header: that needs
    /// their count, so it is written last, into the room, and the request
    /// takes the bytes as they are instead of copying them behind it.
    private var body: [UInt8] = []
    private var count = 0
    /// `*`, a count of up to 8 digits, CR LF.
    private static let headerRoom = 11

    /// `capacity`: the bytes the arguments are expected to take, with their framing.
    public init(capacity: Int = 256) {
        body.reserveCapacity(Self.headerRoom + capacity)
        makeRoom()
    }

    /// The header's room, before the first argument (again after `take()`).
    private mutating func makeRoom() {
        body.append(contentsOf: repeatElement(0, count: Self.headerRoom))
    }

    public mutating func append(_ argument: [UInt8]) {
        appendLength(argument.count)
        body.append(contentsOf: argument)
        body.append(13)
        body.append(10)
    }

    /// Arguments encoded once (see `EncodedArguments`).
    public mutating func append(_ arguments: EncodedArguments) {
        if body.isEmpty { makeRoom() }
        count += arguments.count
        body.append(contentsOf: arguments.bytes)
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

    /// The command as written so far (the builder can go on).
    public var request: RESPRequest {
        var copy = self
        return copy.framed()
    }

    /// The command, taking the bytes written as they are, without a copy;
    /// the builder is left empty.
    public mutating func take() -> RESPRequest {
        defer { (body, count) = ([], 0) }
        return framed()
    }

    private mutating func framed() -> RESPRequest {
        if body.isEmpty { makeRoom() }
        var digits = 1, rest = count
        while rest >= 10 {
            digits += 1
            rest /= 10
        }
        let start = Self.headerRoom - (digits + 3)
        guard start >= 0 else {
            // A count of more than 8 digits (a command of a gigabyte): framed in a copy.
            var bytes = [UInt8(ascii: "*")]
            Self.appendDecimal(UInt64(count), to: &bytes)
            bytes += [13, 10]
            bytes += body[Self.headerRoom...]
            return RESPRequest(bytes: bytes[...])
        }
        body[start] = UInt8(ascii: "*")
        rest = count
        for index in stride(from: start + digits, to: start, by: -1) {
            body[index] = UInt8(ascii: "0") + UInt8(rest % 10)
            rest /= 10
        }
        body[start + digits + 1] = 13
        body[start + digits + 2] = 10
        return RESPRequest(bytes: body[start...])
    }

    private mutating func appendLength(_ length: Int) {
        if body.isEmpty { makeRoom() }
        count += 1
        Self.appendLength(length, to: &body)
    }

    fileprivate static func appendLength(_ length: Int, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "$"))
        appendDecimal(UInt64(length), to: &bytes)
        bytes.append(13)
        bytes.append(10)
    }

    /// Most numbers here are lengths of one or two digits: those are written
    /// without a division's loop. Longer ones (deadlines, seqs) are written
    /// last digit first, in one pass, and then turned around.
    fileprivate static func appendDecimal(_ number: UInt64, to bytes: inout [UInt8]) {
        if number < 10 {
            bytes.append(UInt8(ascii: "0") + UInt8(number))
            return
        }
        if number < 100 {
            bytes.append(UInt8(ascii: "0") + UInt8(number / 10))
            bytes.append(UInt8(ascii: "0") + UInt8(number % 10))
            return
        }
        let start = bytes.count
        var rest = number
        while rest > 0 {
            bytes.append(UInt8(ascii: "0") + UInt8(rest % 10))
            rest /= 10
        }
        var (low, high) = (start, bytes.count - 1)
        while low < high {
            bytes.swapAt(low, high)
            (low, high) = (low + 1, high - 1)
        }
    }
}

/// Arguments encoded once, for the words every call of a kind repeats (a
/// command's and a function's name, settings fixed at start): appended to
/// each call's command as they are, not encoded again.
public struct EncodedArguments: Sendable {
    fileprivate let bytes: [UInt8]
    fileprivate let count: Int

    public init(_ arguments: [[UInt8]]) {
        var bytes: [UInt8] = []
        for argument in arguments {
            RESPRequestBuilder.appendLength(argument.count, to: &bytes)
            bytes += argument
            bytes += [13, 10]
        }
        self.bytes = bytes
        count = arguments.count
    }
}
