#if canImport(Glibc)
import Glibc
#endif
import MicroHTTPD

/// One log line being written: `time level message name=value …` as text, or
/// one JSON object. Field names are the caller's identifiers, written as
/// they are; values are quoted (text, when they hold a space) or escaped
/// (JSON) as needed. It owns the bytes it is written into while it is
/// written, so it cannot be copied either.
struct LogLine: ~Copyable {
    let format: LogFormat
    var bytes: LogBytes

    @inline(__always)
    mutating func field(_ name: StaticString, _ value: String) {
        beginField(name)
        string(value)
    }

    @inline(__always)
    mutating func field(_ name: StaticString, _ value: Int) {
        bounded(name) { $0.field(name, value) }
    }

    /// Milliseconds with three decimals: microseconds are all a request log needs.
    @inline(__always)
    mutating func field(_ name: StaticString, milliseconds duration: Duration) {
        bounded(name) { $0.field(name, milliseconds: duration) }
    }

    /// A constant the caller knows needs neither quotes (text) nor escapes
    /// (JSON): no space, quote, backslash or control byte.
    @inline(__always)
    mutating func field(_ name: StaticString, verbatim value: StaticString) {
        let format = format
        bytes.append(atMost: name.utf8CodeUnitCount + value.utf8CodeUnitCount + BoundedFields.roomPerField) { cursor in
            var fields = BoundedFields(format: format, cursor: cursor)
            fields.field(name, verbatim: value)
            cursor = fields.cursor
        }
    }

    /// Eight lowercase hex digits, e.g. the first 32 bits of a session id.
    @inline(__always)
    mutating func field(_ name: StaticString, hexDigits value: UInt32) {
        bounded(name) { $0.field(name, hexDigits: value) }
    }

    /// Fields whose values have a short bound (numbers, short ids, short
    /// constants), written with one check for room instead of one per
    /// piece: `maxCount` bytes at most in all, names included, and each
    /// field's value and punctuation within ``BoundedFields/roomPerField``.
    @inline(__always)
    mutating func boundedFields(atMost maxCount: Int, _ body: (inout BoundedFields) -> Void) {
        let format = format
        bytes.append(atMost: maxCount) { cursor in
            var fields = BoundedFields(format: format, cursor: cursor)
            body(&fields)
            cursor = fields.cursor
        }
    }

    @inline(__always)
    private mutating func bounded(_ name: StaticString, _ body: (inout BoundedFields) -> Void) {
        boundedFields(atMost: name.utf8CodeUnitCount + BoundedFields.roomPerField, body)
    }

    mutating func field(_ name: String, _ value: LogValue) {
        switch format {
        case .json:
            bytes.append(UInt8(ascii: ","))
            bytes.appendJSONString(name)
            bytes.append(UInt8(ascii: ":"))
        case .text:
            bytes.append(UInt8(ascii: " "))
            bytes.append(name)
            bytes.append(UInt8(ascii: "="))
        }
        switch value {
        case let .string(text): string(text)
        case let .int(number): bytes.appendDecimal(number)
        case let .milliseconds(value):
            bytes.append(atMost: BoundedFields.roomPerField) { $0.putMilliseconds(microseconds: Int((value * 1000).rounded())) }
        }
    }

    @inline(__always)
    mutating func begin(at time: timespec, timestamps: inout TimestampCache, _ head: LineHead) {
        if format == .json { bytes.append(#"{"time":""#) }
        timestamps.append(time, to: &bytes)
        switch head {
        case let .message(level, message): levelAndMessage(level, message)
        case let .text(level, message): levelAndMessage(level, message)
        case let .prepared(start): bytes.append(start.bytes)
        }
    }

    /// What follows the time in every line.
    mutating func levelAndMessage(_ level: LogLevel, _ message: StaticString) {
        self.level(level)
        switch format {
        case .json: bytes.appendJSONString(message)
        case .text: bytes.append(message)
        }
    }

    mutating func levelAndMessage(_ level: LogLevel, _ message: String) {
        self.level(level)
        switch format {
        case .json: bytes.appendJSONString(message)
        case .text: bytes.append(message)
        }
    }

    private mutating func level(_ level: LogLevel) {
        switch format {
        case .json:
            bytes.append(#"","level":""#)
            bytes.append(level.staticName)
            bytes.append(#"","msg":"#)
        case .text:
            bytes.append(UInt8(ascii: " "))
            bytes.append(level.staticName)
            bytes.append(UInt8(ascii: " "))
        }
    }

    mutating func end() {
        if format == .json { bytes.append(UInt8(ascii: "}")) }
        bytes.append(0x0A)
    }

    @inline(__always)
    private mutating func beginField(_ name: StaticString) {
        switch format {
        case .json:
            bytes.append(#",""#)
            bytes.append(name)
            bytes.append(#"":"#)
        case .text:
            bytes.append(UInt8(ascii: " "))
            bytes.append(name)
            bytes.append(UInt8(ascii: "="))
        }
    }

    private mutating func string(_ text: String) {
        switch format {
        case .json: bytes.appendJSONString(text)
        case .text: bytes.appendQuotedIfSpaced(text)
        }
    }

    /// The bytes written, the line given up.
    consuming func finished() -> LogBytes {
        bytes
    }
}

/// The fields of ``LogLine/boundedFields(atMost:_:)``, written where room was made.
struct BoundedFields {
    let format: LogFormat
    var cursor: ByteCursor
    /// Room each field takes besides its name (and a constant value's own
    /// bytes): punctuation (`,"":` and two quotes) and the longest value,
    /// a 20-character `Int` or a duration (sign, 17 digits, point, 3).
    static let roomPerField = 32

    @inline(__always)
    mutating func field(_ name: StaticString, _ value: Int) {
        open(name)
        cursor.putDecimal(value)
    }

    /// An HTTP status: three digits, written without the loop that counts them.
    @inline(__always)
    mutating func field(_ name: StaticString, status: Int) {
        open(name)
        if (100...999).contains(status) {
            cursor.putThreeDigits(UInt(status))
        } else {
            cursor.putDecimal(status)
        }
    }

    @inline(__always)
    mutating func field(_ name: StaticString, milliseconds duration: Duration) {
        open(name)
        // A request's duration fits in 64 bits of attoseconds (up to 9 s),
        // where dividing is one instruction; `components` divides 128 bits.
        let attoseconds = duration.attoseconds
        if let short = Int64(exactly: attoseconds), short >= 0 {
            cursor.putMilliseconds(microseconds: Int((short + 500_000_000_000) / 1_000_000_000_000))
        } else {
            let (seconds, attoseconds) = duration.components
            cursor.putMilliseconds(
                microseconds: Int(seconds) * 1_000_000 + Int((attoseconds + 500_000_000_000) / 1_000_000_000_000))
        }
    }

    /// See ``LogLine/field(_:verbatim:)``; here the value must be short
    /// (its bytes count against ``roomPerField``).
    @inline(__always)
    mutating func field(_ name: StaticString, verbatim value: StaticString) {
        open(name)
        if format == .json { cursor.put(UInt8(ascii: "\"")) }
        cursor.put(value)
        if format == .json { cursor.put(UInt8(ascii: "\"")) }
    }

    /// Room a trace or request id field takes besides its name: 64 bytes
    /// at most (``RequestIdentity``) and punctuation.
    static let roomPerID = 64 + 8

    /// `trace_id` and `request_id`: the trace id's 32 hex digits, then the
    /// id the client gave (nothing in it to quote or escape, see
    /// ``RequestIdentity``) or the made one, whose digits are those just
    /// written when no trace came (then copied, not made again).
    @inline(__always)
    mutating func idFields(_ identity: RequestIdentity) {
        open("trace_id")
        if format == .json { cursor.put(UInt8(ascii: "\"")) }
        let trace = cursor.next
        cursor.putHex(identity.traceID)
        if format == .json { cursor.put(UInt8(ascii: "\"")) }
        open("request_id")
        if format == .json { cursor.put(UInt8(ascii: "\"")) }
        if let given = identity.givenRequestID {
            given.withBytes { cursor.put($0) }
        } else if identity.traceID == identity.madeID {
            cursor.putCopy(of: trace, count: 32)
        } else {
            cursor.putHex(identity.madeID)
        }
        if format == .json { cursor.put(UInt8(ascii: "\"")) }
    }

    @inline(__always)
    mutating func field(_ name: StaticString, hexDigits value: UInt32) {
        open(name)
        if format == .json { cursor.put(UInt8(ascii: "\"")) }
        cursor.putEightHexDigits(value)
        if format == .json { cursor.put(UInt8(ascii: "\"")) }
    }

    @inline(__always)
    private mutating func open(_ name: StaticString) {
        switch format {
        case .json:
            cursor.put(#",""#)
            cursor.put(name)
            cursor.put(#"":"#)
        case .text:
            cursor.put(UInt8(ascii: " "))
            cursor.put(name)
            cursor.put(UInt8(ascii: "="))
        }
    }
}
