import Foundation

/// A response as a test received it: over the wire, or from the API in
/// this process (``InProcessClient``).
public struct ReceivedResponse: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(name: String, value: String)], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The version an ETag `"<version>.<tag>"` names; nil for any other form.
    public var etagVersion: UInt64? {
        guard let etag = header("ETag"), etag.hasPrefix("\""), etag.hasSuffix("\""), etag.count > 2 else { return nil }
        return versionOf(String(etag.dropFirst().dropLast()))
    }

    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// The body as a JSON object, read by Foundation's parser (not the server's).
    public var json: [String: Any] {
        get throws {
            guard let object = try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
                throw NotAJSONObject(text: text)
            }
            return object
        }
    }

    public var text: String { String(decoding: body, as: UTF8.self) }
}

/// A body a test read as a JSON object was something else.
public struct NotAJSONObject: Error, CustomStringConvertible {
    public let text: String
    public var description: String { "not a JSON object: \(text)" }
}

/// The version an entity tag's text or an event id (`<version>.<tag>`, the
/// tag twelve lower-case hex digits) names; nil for any other form.
public func versionOf(_ text: String?) -> UInt64? {
    guard let parts = text?.split(separator: ".", omittingEmptySubsequences: false), parts.count == 2,
          parts[1].count == 12, parts[1].allSatisfy({ $0.isHexDigit && !$0.isUppercase }) else { return nil }
    return UInt64(parts[0])
}
