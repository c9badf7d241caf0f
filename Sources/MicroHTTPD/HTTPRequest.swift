/// One HTTP request, read in full, as the server hands it to a ``HTTPResponder``.
public struct HTTPRequest: Sendable {
    /// The request method as sent, e.g. `GET`.
    public var method: String
    /// The path of the request target as sent, without the query. Not
    /// percent-decoded, so `%2F` and `%00` cannot pose as `/` or end it early.
    public var path: String
    /// The protocol version as sent, e.g. `HTTP/1.1`.
    public var version: String
    public var headers: HTTPHeaders
    /// The body; empty when the body was over the server's limit (see ``isBodyTooLarge``).
    public var body: [UInt8]
    /// The body was longer than the server's `maxBodyBytes`. Its bytes were
    /// read and thrown away, never buffered, so the connection stays usable;
    /// the responder decides how to say so (usually 413).
    public var isBodyTooLarge: Bool

    public init(
        method: String,
        path: String,
        version: String = "HTTP/1.1",
        headers: HTTPHeaders = HTTPHeaders(),
        body: [UInt8] = [],
        isBodyTooLarge: Bool = false
    ) {
        self.method = method
        self.path = path
        self.version = version
        self.headers = headers
        self.body = body
        self.isBodyTooLarge = isBodyTooLarge
    }
}

/// Request or response header fields, in the order they came.
/// Names compare case-insensitively, as HTTP says.
public struct HTTPHeaders: Sendable, Sequence {
    public private(set) var fields: [(name: String, value: String)] = []

    public init() {}

    public init(_ fields: [(String, String)]) {
        self.fields = fields.map { (name: $0.0, value: $0.1) }
    }

    public mutating func add(name: String, value: String) {
        fields.append((name: name, value: value))
    }

    /// The first value of the field `name`, if present.
    public subscript(name: String) -> String? {
        fields.first { $0.name.caseInsensitiveEquals(name) }?.value
    }

    /// All values of the field `name` as one comma-separated list: a field
    /// sent on several lines means the same as one line with the values
    /// joined (RFC 9110 §5.3).
    public func combined(_ name: String) -> String? {
        var combined: String?
        for field in fields where field.name.caseInsensitiveEquals(name) {
            combined = combined.map { $0 + ", " + field.value } ?? field.value
        }
        return combined
    }

    mutating func reserveCapacity(_ count: Int) {
        fields.reserveCapacity(count)
    }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> {
        fields.makeIterator()
    }
}

extension String {
    /// ASCII case-insensitive comparison: header names are ASCII tokens.
    func caseInsensitiveEquals(_ other: String) -> Bool {
        if self == other { return true }  // the usual case, and cheap
        var a = self, b = other
        return a.withUTF8 { x in
            b.withUTF8 { y in
                guard x.count == y.count else { return false }
                for index in 0..<x.count where x[index] != y[index] {
                    let lower = x[index] | 0x20
                    guard lower == y[index] | 0x20, lower >= UInt8(ascii: "a"), lower <= UInt8(ascii: "z") else { return false }
                }
                return true
            }
        }
    }
}
