#if canImport(Glibc)
import Glibc
#endif
import MicroHTTPD
import TopChromeCore

// The API's byte-level code, all of it: what runs on every request reads and
// writes bytes in place, without building strings or checking an array's
// bounds on each byte. Everything else calls the safe members here.

/// Reads a request body byte by byte, for ``ScrollReportFastPath``: the
/// position, and the few kinds of token a scroll report is made of.
struct ByteReader {
    private let bytes: UnsafeBufferPointer<UInt8>
    var index = 0

    private init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    /// `read` given a reader at the start of `body`; the reader must not outlive the call.
    @inline(__always)
    static func reading<Result>(_ body: [UInt8], _ read: (inout ByteReader) -> Result) -> Result {
        body.withUnsafeBufferPointer { bytes in
            var reader = ByteReader(bytes: bytes)
            return read(&reader)
        }
    }

    @inline(__always)
    var isAtEnd: Bool { index == bytes.count }

    @inline(__always)
    var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

    @inline(__always)
    subscript(position: Int) -> UInt8 { bytes[position] }

    @inline(__always)
    mutating func take(_ byte: UInt8) -> Bool {
        guard peek == byte else { return false }
        index += 1
        return true
    }

    @inline(__always)
    mutating func skipWhitespace() {
        while let byte = peek, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { index += 1 }
    }

    /// How many ASCII digits were passed over.
    @inline(__always)
    mutating func digits() -> Int {
        let start = index
        while let byte = peek, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") { index += 1 }
        return index - start
    }

    /// A JSON string without escapes or control characters, as the range of its bytes.
    @inline(__always)
    mutating func plainString() -> Range<Int>? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = index
        while let byte = peek, byte != UInt8(ascii: "\"") {
            guard byte >= 0x20, byte != UInt8(ascii: "\\") else { return nil }
            index += 1
        }
        guard take(UInt8(ascii: "\"")) else { return nil }
        return start..<(index - 1)
    }

    @inline(__always)
    func equals(_ range: Range<Int>, _ literal: StaticString) -> Bool {
        UnsafeBufferPointer(rebasing: bytes[range]).equals(literal)
    }

    /// The ASCII digits in `range` (at most 19, so they fit) as a number.
    @inline(__always)
    func decimal(_ range: Range<Int>) -> UInt64 {
        var value: UInt64 = 0
        for position in range { value = value * 10 + UInt64(bytes[position] &- UInt8(ascii: "0")) }
        return value
    }

    /// The number in `range` converted by `strtod` (correctly rounded); nil
    /// if it is not finite or longer than any number a report needs.
    func converted(_ range: Range<Int>) -> Double? {
        guard range.count < 64 else { return nil }
        return withUnsafeTemporaryAllocation(of: CChar.self, capacity: 64) { text in
            for offset in 0..<range.count { text[offset] = CChar(bitPattern: bytes[range.lowerBound + offset]) }
            text[range.count] = 0
            let value = strtod(text.baseAddress!, nil)
            return value.isFinite ? value : nil
        }
    }
}

/// Writes a short answer byte by byte into room on the stack, for
/// ``StateWriter`` and the entity tag: nothing is checked per byte, so the
/// caller makes room for the longest answer.
struct ByteWriter {
    private let bytes: UnsafeMutableBufferPointer<UInt8>
    private(set) var count = 0

    private init(bytes: UnsafeMutableBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    /// What `write` wrote, in at most `capacity` bytes, appended to `array`.
    @inline(__always)
    static func append(to array: inout [UInt8], capacity: Int, _ write: (inout ByteWriter) -> Void) {
        // Written on the stack and copied once into the array, grown by
        // `reserveCapacity`, whose allocation is specialized for bytes;
        // `Array(unsafeUninitializedCapacity:)` allocates through the
        // standard library's generic code, which looks up the storage's
        // type metadata on every call (~360 instructions of ~530).
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity) { bytes in
            var writer = ByteWriter(bytes: bytes)
            write(&writer)
            assert(writer.count <= capacity, "the longest answer fits")
            array.reserveCapacity(array.count + writer.count)
            array.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[..<writer.count]))
        }
    }

    @inline(__always)
    mutating func write(_ byte: UInt8) {
        bytes[count] = byte
        count += 1
    }

    @inline(__always)
    mutating func write(_ text: StaticString) {
        count = UnsafeMutableBufferPointer(rebasing: bytes[count...])
            .initialize(from: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)).1 + count
    }

    /// Labelled apart from `write(_: StaticString)`, which a literal would otherwise not reach.
    @inline(__always)
    mutating func write(utf8Of text: String) {
        for byte in text.utf8 { write(byte) }
    }

    /// 10^0 through 10^19, every power of ten a `UInt64` holds.
    private static let powersOfTen: [UInt64] = (0..<20).map { (0..<$0).reduce(1) { power, _ in power * 10 } }

    /// `value` in decimal, two digits a step: most answers to a scroll
    /// report carry a `lastSeq` of some 16 digits.
    @inline(__always)
    mutating func writeDecimal(_ value: UInt64) {
        // The count from the bit width (log10 2 ≈ 1233 / 4096), one less
        // below that power of ten; `| 1` makes zero one digit.
        let power = ((UInt64.bitWidth - (value | 1).leadingZeroBitCount) &* 1233) >> 12
        let digitCount = power + 1 - (value | 1 < Self.powersOfTen[power] ? 1 : 0)
        let pairs: StaticString = """
            0001020304050607080910111213141516171819\
            2021222324252627282930313233343536373839\
            4041424344454647484950515253545556575859\
            6061626364656667686970717273747576777879\
            8081828384858687888990919293949596979899
            """
        var rest = value, end = count + digitCount
        while rest >= 100 {
            let pair = Int(truncatingIfNeeded: rest % 100) &* 2
            rest /= 100
            end -= 2
            bytes[end] = pairs.utf8Start[pair]
            bytes[end + 1] = pairs.utf8Start[pair + 1]
        }
        if rest >= 10 {
            let pair = Int(truncatingIfNeeded: rest) &* 2
            bytes[end - 2] = pairs.utf8Start[pair]
            bytes[end - 1] = pairs.utf8Start[pair + 1]
        } else {
            bytes[end - 1] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: rest)
        }
        count += digitCount
    }

    /// The id's 32 lowercase hex digits.
    @inline(__always)
    mutating func writeHexDigits(of id: SessionID) {
        id.writeHexDigits(to: UnsafeMutableBufferPointer(rebasing: bytes[count...]))
        count += 32
    }

    /// The entity tag, in quotes, as a header holds it.
    @inline(__always)
    mutating func writeQuoted(_ tag: EntityTag) {
        write(UInt8(ascii: "\""))
        count = tag.write(into: bytes, at: count)
        write(UInt8(ascii: "\""))
    }

    /// The bytes written, to `use` while they last.
    @inline(__always)
    fileprivate static func withBytes<Result>(capacity: Int, _ write: (inout ByteWriter) -> Void,
                                              _ use: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity) { bytes in
            var writer = ByteWriter(bytes: bytes)
            write(&writer)
            return use(UnsafeBufferPointer(rebasing: bytes[..<writer.count]))
        }
    }
}

extension SessionAPI {
    /// The session's entity tag, as `ETag` carries it: its version, and a
    /// tag that tells this state apart from any other that had the version
    /// (see `StateTag`).
    static func etag(_ session: Session) -> String {
        ByteWriter.withBytes(capacity: EntityTag.maxLength + 2, { $0.writeQuoted(session.entityTag) }) {
            String(decoding: $0, as: UTF8.self)
        }
    }
}

extension HTTPHeaders {
    /// `ETag`, its bytes written on the stack: every state answer carries
    /// one, and it goes into the headers without becoming a `String`.
    mutating func addETag(of session: Session) {
        ByteWriter.withBytes(capacity: EntityTag.maxLength + 2, { $0.writeQuoted(session.entityTag) }) {
            add(name: "ETag", writtenValue: $0)
        }
    }
}

extension Route {
    /// The route for `path`, or nil if no resource lives there. A
    /// well-formed path with a malformed id still names a resource kind (so a
    /// wrong method gets 405); its id is nil and it is simply not found.
    init?(path: String) {
        // Byte-wise: this runs on every request.
        var path = path
        guard let route = path.withUTF8({ Route(bytes: $0) }) else { return nil }
        self = route
    }

    /// The route for a request's ``MicroHTTPDRequest/pathBytes``.
    init?(pathBytes: [UInt8]) {
        guard let route = pathBytes.withUnsafeBufferPointer({ Route(bytes: $0) }) else { return nil }
        self = route
    }

    private init?(bytes: UnsafeBufferPointer<UInt8>) {
        if let route = Route(sessionPath: bytes) {
            self = route
        } else if let fixed = Self.fixedPaths.first(where: { bytes.equals($0.path) }) {
            self = fixed.route
        } else {
            return nil
        }
    }

    /// `/v1/sessions/{id}` and its sub-resources.
    private init?(sessionPath bytes: UnsafeBufferPointer<UInt8>) {
        let prefix: StaticString = "/v1/sessions/"
        let prefixCount = prefix.utf8CodeUnitCount
        guard bytes.count > prefixCount,
              memcmp(bytes.baseAddress!, prefix.utf8Start, prefixCount) == 0 else { return nil }
        let rest = UnsafeBufferPointer(rebasing: bytes[prefixCount...])
        let slash = memchr(rest.baseAddress!, Int32(UInt8(ascii: "/")), rest.count)
            .map { UnsafeRawPointer($0) - UnsafeRawPointer(rest.baseAddress!) } ?? rest.count
        guard slash > 0 else { return nil }
        let id = SessionID(utf8: UnsafeBufferPointer(rebasing: rest[..<slash]))
        if slash == rest.count {
            self = .session(id)
            return
        }
        let suffix = UnsafeBufferPointer(rebasing: rest[(slash + 1)...])
        if suffix.equals("scroll") {
            self = .scroll(id)
        } else if suffix.equals("inset") {
            self = .inset(id)
        } else if suffix.equals("disappear") {
            self = .disappear(id)
        } else if suffix.equals("events") {
            self = .events(id)
        } else if suffix.equals("behavior") {
            self = .behavior(id)
        } else if suffix.equals("socket") {
            self = .socket(id)
        } else if suffix.equals("tokens") {
            self = .tokens(id)
        } else {
            return nil
        }
    }
}

extension UnsafeBufferPointer<UInt8> {
    /// Whether these bytes are exactly `literal`'s.
    fileprivate func equals(_ literal: StaticString) -> Bool {
        count == literal.utf8CodeUnitCount && (count == 0 || memcmp(baseAddress!, literal.utf8Start, count) == 0)
    }
}
