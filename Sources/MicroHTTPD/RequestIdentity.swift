import Synchronization

/// Which trace a request belongs to and which request it is, for the log
/// lines about it: W3C Trace Context's `traceparent` and the client's
/// `X-Request-Id`, each taken when well formed, else made here. Made from a
/// prefix drawn per connection and the request's number on it: a request
/// allocates nothing for them, and formats them only where a log writes them.
public struct RequestIdentity: Sendable {
    /// The trace id, 128 bits written as 32 lowercase hex digits: the
    /// `traceparent`'s trace-id, or the made id (a trace starts here).
    public let traceID: (high: UInt64, low: UInt64)
    /// The made id: the connection's prefix and the request's number on
    /// it, unique in the process.
    public let madeID: (high: UInt64, low: UInt64)
    /// `X-Request-Id` as sent, when well formed (see ``GivenRequestID``);
    /// nil when absent or malformed: then the request's id is ``madeID``.
    public let givenRequestID: GivenRequestID?

    /// An identity as the server makes one, for an exchange made elsewhere
    /// (tests, the documented log line); `givenRequestID` must be well formed.
    public init(traceID: (high: UInt64, low: UInt64), madeID: (high: UInt64, low: UInt64), givenRequestID: String? = nil) {
        self.traceID = traceID
        self.madeID = madeID
        self.givenRequestID = givenRequestID.flatMap { text in
            Array(text.utf8).withUnsafeBufferPointer { GivenRequestID($0) }
        }
    }

    /// The identity of a request whose fields said `given`, on a
    /// connection with this `prefix`, the request's `number` there (1 and up).
    init(given: borrowing GivenIdentity, prefix: UInt64, number: UInt64) {
        madeID = (prefix, number)
        traceID = given.traceID ?? madeID
        givenRequestID = given.requestID
    }

    /// 128 bits as 32 lowercase hex digits, four words stored at `target`.
    public static func writeHex(_ value: (high: UInt64, low: UInt64), into target: UnsafeMutableRawPointer) {
        target.storeBytes(of: hexDigits(UInt32(truncatingIfNeeded: value.high >> 32)), toByteOffset: 0, as: UInt64.self)
        target.storeBytes(of: hexDigits(UInt32(truncatingIfNeeded: value.high)), toByteOffset: 8, as: UInt64.self)
        target.storeBytes(of: hexDigits(UInt32(truncatingIfNeeded: value.low >> 32)), toByteOffset: 16, as: UInt64.self)
        target.storeBytes(of: hexDigits(UInt32(truncatingIfNeeded: value.low)), toByteOffset: 24, as: UInt64.self)
    }

    /// Eight lowercase hex digits of `value` in one word whose bytes, in
    /// memory, are the digits in order: a byte per nibble, then each made a
    /// digit, all at once (no table, no loop).
    private static func hexDigits(_ value: UInt32) -> UInt64 {
        var nibbles = UInt64(value)
        nibbles = (nibbles & 0xFFFF) | (nibbles & 0xFFFF_0000) << 16
        nibbles = (nibbles & 0x0000_00FF_0000_00FF) | (nibbles & 0x0000_FF00_0000_FF00) << 8
        nibbles = (nibbles & 0x000F_000F_000F_000F) | (nibbles & 0x00F0_00F0_00F0_00F0) << 4
        // 1 in each byte whose nibble is 10 or more: those become a–f, 39 past '0'…'9'.
        let letters = (nibbles &+ 0x0606_0606_0606_0606) >> 4 & 0x0101_0101_0101_0101
        return (nibbles &+ 0x3030_3030_3030_3030 &+ letters &* 39).bigEndian
    }

    static var traceparentName: UnsafeBufferPointer<UInt8> { StaticString("traceparent").buffer }
    static var requestIDName: UnsafeBufferPointer<UInt8> { StaticString("x-request-id").buffer }
    /// The trace-id of a `traceparent` of version 00 (W3C Trace Context
    /// §3.2): `00-<32 hex trace-id>-<16 hex parent-id>-<2 hex flags>`,
    /// lowercase, neither id all zeros; nil for anything else.
    static func traceID(inTraceparent value: UnsafeBufferPointer<UInt8>) -> (high: UInt64, low: UInt64)? {
        guard value.count == 55, value[0] == UInt8(ascii: "0"), value[1] == UInt8(ascii: "0"),
              value[2] == UInt8(ascii: "-"), value[35] == UInt8(ascii: "-"), value[52] == UInt8(ascii: "-"),
              let high = hex(value, 3..<19), let low = hex(value, 19..<35), let parent = hex(value, 36..<52),
              hex(value, 53..<55) != nil, high | low != 0, parent != 0 else { return nil }
        return (high, low)
    }

    /// Lowercase hex digits (16 at most) as a number; nil for anything else.
    private static func hex(_ value: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> UInt64? {
        var number: UInt64 = 0
        for index in range {
            let byte = value[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            default: return nil
            }
            number = number << 4 | UInt64(digit)
        }
        return number
    }

    /// A prefix for a new connection's made ids: distinct for every
    /// connection of the process (a bijection of its number) and unlike
    /// another process's (a random seed).
    static func connectionPrefix() -> UInt64 {
        var z = prefixSeed &+ connectionNumbers.add(1, ordering: .relaxed).newValue &* 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A request's `traceparent` and `X-Request-Id`, each from its first
/// field, read in the pass that checks the request's head: looking for
/// them among the fields afterwards walked every field once more.
struct GivenIdentity {
    /// The `traceparent`'s trace-id, when well formed.
    private(set) var traceID: (high: UInt64, low: UInt64)?
    private(set) var requestID: GivenRequestID?
    private var sawTrace = false, sawRequestID = false

    /// Something was read: only then is there anything to forget between requests.
    var isEmpty: Bool { !(sawTrace || sawRequestID) }

    /// By length and first letter before comparing: every request has a
    /// `Host`, and a body a `Content-Type` and `Content-Length`; few have either of these.
    @inline(__always)
    mutating func read(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        if name.count == 11, name[0] | 0x20 == UInt8(ascii: "t"), !sawTrace,
           name.caseInsensitiveEquals(RequestIdentity.traceparentName) {
            sawTrace = true
            traceID = RequestIdentity.traceID(inTraceparent: value)
        } else if name.count == 12, name[0] | 0x20 == UInt8(ascii: "x"), !sawRequestID,
                  name.caseInsensitiveEquals(RequestIdentity.requestIDName) {
            sawRequestID = true
            requestID = GivenRequestID(value)
        }
    }
}

/// `X-Request-Id` as a client sent it: 1–64 bytes of letters, digits and
/// `-_.:/+=@` (nothing a log or a header must quote, escape or split).
/// Kept inline and NUL-terminated (a C string for libmicrohttpd), so a
/// request allocates nothing for it and an identity copies as plain bytes.
public struct GivenRequestID: Sendable {
    static let longest = 64
    /// The bytes, then a NUL: 72 bytes, room for the longest id and its NUL.
    private var storage: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0, 0)
    public let count: Int

    /// Nil for a value that is empty, too long, or holds anything else.
    init?(_ value: UnsafeBufferPointer<UInt8>) {
        guard (1...Self.longest).contains(value.count), value.allSatisfy(Self.isSafe) else { return nil }
        count = value.count
        withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: UnsafeRawBufferPointer(value)) }
    }

    /// The id's bytes.
    public func withBytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        let count = count
        return withUnsafeBytes(of: storage) { body(UnsafeBufferPointer(start: $0.baseAddress!.assumingMemoryBound(to: UInt8.self), count: count)) }
    }

    /// The id as a C string.
    func withCString<Result>(_ body: (UnsafePointer<CChar>) -> Result) -> Result {
        withUnsafeBytes(of: storage) { body($0.baseAddress!.assumingMemoryBound(to: CChar.self)) }
    }

    private static func isSafe(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: ":"), UInt8(ascii: "/"),
             UInt8(ascii: "+"), UInt8(ascii: "="), UInt8(ascii: "@"): true
        default: false
        }
    }
}

private let connectionNumbers = Atomic<UInt64>(0)
private let prefixSeed = UInt64.random(in: .min ... .max)

extension StaticString {
    var buffer: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: utf8Start, count: utf8CodeUnitCount) }
}

