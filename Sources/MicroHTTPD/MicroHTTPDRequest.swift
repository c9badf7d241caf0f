#if canImport(Glibc)
import Glibc
#endif

/// One HTTP request, read in full, as the server hands it to a ``HTTPResponder``.
public struct MicroHTTPDRequest: Sendable {
    /// The request method as sent, e.g. `GET`.
    public var method: String
    /// The path of the request target as sent (of an absolute-form target,
    /// `http://host/path`, its path), without the query. Not
    /// percent-decoded, so `%2F` and `%00` cannot pose as `/` or end it early.
    public var path: String {
        get { String(decoding: pathBytes, as: UTF8.self) }
        set { pathBytes = Array(newValue.utf8) }
    }
    /// ``path`` as the bytes that came: what routing reads, so the server
    /// makes no string of it per request.
    public var pathBytes: [UInt8]
    /// The protocol version as sent, e.g. `HTTP/1.1`.
    public var version: String
    public var headers: HTTPHeaders
    /// The body; empty when the body was over the server's limit (see ``isBodyTooLarge``).
    public var body: [UInt8]
    /// The body was longer than the server's `maxBodyBytes`. Its bytes were
    /// read and thrown away, never buffered, so the connection stays usable;
    /// the responder decides how to say so (usually 413).
    public var isBodyTooLarge: Bool
    /// Who asked, as ``HTTPExchange/client`` names it: the peer's address,
    /// or behind a trusted proxy the client its `X-Forwarded-For` names.
    public var client: String?

    public init(
        method: String,
        path: String,
        version: String = "HTTP/1.1",
        headers: HTTPHeaders = HTTPHeaders(),
        body: [UInt8] = [],
        isBodyTooLarge: Bool = false,
        client: String? = nil
    ) {
        self.init(method: method, pathBytes: Array(path.utf8), version: version, headers: headers, body: body,
                  isBodyTooLarge: isBodyTooLarge)
        self.client = client
    }

    init(method: String, pathBytes: [UInt8], version: String, headers: HTTPHeaders, body: [UInt8], isBodyTooLarge: Bool) {
        self.method = method
        self.pathBytes = pathBytes
        self.version = version
        self.headers = headers
        self.body = body
        self.isBodyTooLarge = isBodyTooLarge
    }
}

/// Request or response header fields, in the order they came.
/// Names compare case-insensitively, as HTTP says.
///
/// Every field is kept in one byte buffer as the lengths of its name and
/// value, then `name NUL value NUL`: a message costs one allocation however
/// many fields it has, a lookup compares bytes without making strings or
/// searching for ends, and libmicrohttpd takes names and values as they lie.
/// The buffer's bytes past `byteCount` are room left by fields removed: a
/// field is written in place, and emptying the fields for the connection's
/// next request is setting a count.
public struct HTTPHeaders: Sendable, Sequence {
    private var storage: [UInt8] = []
    /// Bytes of `storage` that hold fields.
    private var byteCount = 0
    /// Name length and value length, each a `UInt32`.
    private static let lengthsSize = 8

    public init() {}

    public init(_ fields: [(String, String)]) {
        reserveCapacity(fields.reduce(0) { $0 + $1.0.utf8.count + $1.1.utf8.count + Self.lengthsSize + 2 })
        for (name, value) in fields { add(name: name, value: value) }
    }

    /// A NUL in `name` or `value` ends it there, as it would in C.
    public mutating func add(name: String, value: String) {
        var name = name, value = value
        name.withUTF8 { name in value.withUTF8 { value in add(name: name, value: value) } }
    }

    /// A field of the server's own text (`Content-Type: application/json`):
    /// every answer adds a few, so their bytes are read where the binary
    /// holds them, with no string to open and no NUL to look for.
    package mutating func add(name: StaticString, value: StaticString) {
        append(name: name.buffer, value: value.buffer)
    }

    /// A field named by the server whose value it wrote on the stack (an
    /// entity tag) and need not become a `String` first; no NUL in it.
    package mutating func add(name: StaticString, writtenValue value: UnsafeBufferPointer<UInt8>) {
        append(name: name.buffer, value: value)
    }

    mutating func add(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        append(name: UnsafeBufferPointer(rebasing: name[..<Self.countBeforeNUL(name)]),
               value: UnsafeBufferPointer(rebasing: value[..<Self.countBeforeNUL(value)]))
    }

    /// Writes the field as it is: no NUL in `name` or `value`.
    private mutating func append(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        let nameCount = name.count, valueCount = value.count
        let start = byteCount, end = start + Self.lengthsSize + nameCount + valueCount + 2
        if end > storage.count { extend(to: end) }
        storage.withUnsafeMutableBytes { bytes in
            bytes.storeBytes(of: UInt32(nameCount), toByteOffset: start, as: UInt32.self)
            bytes.storeBytes(of: UInt32(valueCount), toByteOffset: start + 4, as: UInt32.self)
            let nameStart = bytes.baseAddress! + start + Self.lengthsSize
            if nameCount > 0 { nameStart.copyMemory(from: name.baseAddress!, byteCount: nameCount) }
            nameStart.storeBytes(of: 0, toByteOffset: nameCount, as: UInt8.self)
            if valueCount > 0 { (nameStart + nameCount + 1).copyMemory(from: value.baseAddress!, byteCount: valueCount) }
            nameStart.storeBytes(of: 0, toByteOffset: nameCount + 1 + valueCount, as: UInt8.self)
        }
        byteCount = end
    }

    /// Adds every field of `other`, in its order.
    public mutating func add(contentsOf other: HTTPHeaders) {
        other.forEachField { name, value in
            add(name: name, value: value)
            return true
        }
    }

    /// Makes the buffer `count` bytes long (within its capacity, if it has
    /// room), copying zeros: a copy, where writing them one by one costs a
    /// loop per byte.
    private mutating func extend(to count: Int) {
        Self.zeros.withUnsafeBufferPointer { zeros in
            while storage.count < count {
                storage.append(contentsOf: UnsafeBufferPointer(rebasing: zeros.prefix(count - storage.count)))
            }
        }
    }

    private static let zeros = [UInt8](repeating: 0, count: 256)

    private static func countBeforeNUL(_ text: UnsafeBufferPointer<UInt8>) -> Int {
        guard let base = text.baseAddress, let nul = memchr(base, 0, text.count) else { return text.count }
        return UnsafeRawPointer(nul) - UnsafeRawPointer(base)
    }

    /// Room for `byteCount` bytes of fields in all before growing.
    public mutating func reserveCapacity(_ byteCount: Int) {
        // Most calls find the room there already (a connection's buffer reused).
        if storage.capacity < byteCount { storage.reserveCapacity(byteCount) }
    }

    /// Bytes of fields that fit before the buffer grows.
    var byteCapacity: Int { storage.capacity }

    /// No fields; with `keepingCapacity`, the buffer stays for the next message.
    mutating func removeAll(keepingCapacity: Bool) {
        if !keepingCapacity { storage = [] }
        byteCount = 0
    }

    /// The first value of the field `name`, if present.
    public subscript(name: String) -> String? {
        var found: String?
        forEachValue(of: name) { value in
            found = String(decoding: value, as: UTF8.self)
            return false
        }
        return found
    }

    /// Whether a field `name` is present.
    public func contains(_ name: String) -> Bool {
        var found = false
        forEachValue(of: name) { _ in
            found = true
            return false
        }
        return found
    }

    /// Whether the first field `name` has exactly the value `value`; no
    /// string is made, so the everyday case of a check costs a comparison.
    public func first(_ name: String, is value: String) -> Bool {
        var value = value, matches = false
        value.withUTF8 { expected in
            forEachValue(of: name) { actual in
                matches = actual.count == expected.count
                    && (actual.isEmpty || memcmp(actual.baseAddress!, expected.baseAddress!, actual.count) == 0)
                return false
            }
        }
        return matches
    }

    /// All values of the field `name` as one comma-separated list: a field
    /// sent on several lines means the same as one line with the values
    /// joined (RFC 9110 §5.3).
    public func combined(_ name: String) -> String? {
        var name = name
        return name.withUTF8 { combined(named: $0) }
    }

    /// ``combined(_:)`` for a name of the server's own text, read where the
    /// binary holds it: the API asks for a few fields on every request,
    /// most often absent, and asking then costs no string.
    package func combined(_ name: StaticString) -> String? {
        combined(named: name.buffer)
    }

    private func combined(named name: UnsafeBufferPointer<UInt8>) -> String? {
        var combined: String?
        forEachValue(named: name) { value in
            let text = String(decoding: value, as: UTF8.self)
            combined = combined.map { $0 + ", " + text } ?? text
            return true
        }
        return combined
    }

    public var fields: [(name: String, value: String)] {
        var fields: [(name: String, value: String)] = []
        forEachField { name, value in
            fields.append((String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
            return true
        }
        return fields
    }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> {
        fields.makeIterator()
    }

    /// Each field's name and value as C strings, for libmicrohttpd (each is
    /// stored with its NUL).
    func forEachCString(_ body: (UnsafePointer<CChar>, UnsafePointer<CChar>) -> Void) {
        forEachField { name, value in
            body(UnsafeRawPointer(name.baseAddress!).assumingMemoryBound(to: CChar.self),
                 UnsafeRawPointer(value.baseAddress!).assumingMemoryBound(to: CChar.self))
            return true
        }
    }

    /// Calls `body` with the value of every field `name` until it returns false.
    @inline(__always)
    func forEachValue(of name: String, _ body: (UnsafeBufferPointer<UInt8>) -> Bool) {
        var name = name
        name.withUTF8 { forEachValue(named: $0, body) }
    }

    @inline(__always)
    private func forEachValue(named wanted: UnsafeBufferPointer<UInt8>, _ body: (UnsafeBufferPointer<UInt8>) -> Bool) {
        forEachField { fieldName, value in
            fieldName.caseInsensitiveEquals(wanted) ? body(value) : true
        }
    }

    /// Calls `body` with every field's name and value (without their NULs) until it returns false.
    @inline(__always)
    func forEachField(_ body: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> Bool) {
        storage.withUnsafeBytes { bytes in
            var start = 0
            while start < byteCount {
                let nameCount = Int(bytes.loadUnaligned(fromByteOffset: start, as: UInt32.self))
                let valueCount = Int(bytes.loadUnaligned(fromByteOffset: start + 4, as: UInt32.self))
                let name = (bytes.baseAddress! + start + Self.lengthsSize).assumingMemoryBound(to: UInt8.self)
                let value = name + nameCount + 1
                guard body(UnsafeBufferPointer(start: name, count: nameCount),
                           UnsafeBufferPointer(start: value, count: valueCount)) else { return }
                start += Self.lengthsSize + nameCount + valueCount + 2
            }
        }
    }
}

extension UnsafeBufferPointer<UInt8> {
    /// ASCII case-insensitive comparison: header names are ASCII tokens.
    /// Clients nearly always spell a name as it is compared with
    /// (`Content-Type`), so names of eight bytes or more are first compared
    /// eight bytes at a time, and byte by byte only when that differs.
    func caseInsensitiveEquals(_ other: UnsafeBufferPointer<UInt8>) -> Bool {
        guard count == other.count else { return false }
        if count >= 8, exactlyEquals(other) { return true }
        for index in 0..<count where self[index] != other[index] {
            let lower = self[index] | 0x20
            guard lower == other[index] | 0x20, lower >= UInt8(ascii: "a"), lower <= UInt8(ascii: "z") else { return false }
        }
        return true
    }

    /// Byte for byte, eight at a time; the last eight overlap the word before
    /// when the count is not a multiple of 8. Both hold `count` (≥ 8) bytes.
    private func exactlyEquals(_ other: UnsafeBufferPointer<UInt8>) -> Bool {
        let mine = UnsafeRawPointer(baseAddress!), theirs = UnsafeRawPointer(other.baseAddress!)
        var offset = 0
        while offset < count - 8 {
            guard mine.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                == theirs.loadUnaligned(fromByteOffset: offset, as: UInt64.self) else { return false }
            offset += 8
        }
        return mine.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
            == theirs.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
    }
}
