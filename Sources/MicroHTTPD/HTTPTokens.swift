#if canImport(Glibc)
import Glibc
#endif

/// The request line's tokens, made cheaply: the usual methods and versions
/// are the same few every time, and a literal costs no allocation; the path
/// is kept as bytes, which is all routing reads.
enum HTTPTokens {
    static func method(_ text: UnsafePointer<CChar>) -> String {
        let count = strlen(text)
        if matches(text, count, "GET") { return "GET" }
        if matches(text, count, "POST") { return "POST" }
        if matches(text, count, "PUT") { return "PUT" }
        if matches(text, count, "DELETE") { return "DELETE" }
        if matches(text, count, "HEAD") { return "HEAD" }
        return String(cString: text)
    }

    static func version(_ text: UnsafePointer<CChar>) -> String {
        let count = strlen(text)
        if matches(text, count, "HTTP/1.1") { return "HTTP/1.1" }
        if matches(text, count, "HTTP/1.0") { return "HTTP/1.0" }
        return String(cString: text)
    }

    /// The path of a request target as sent, into `path` (emptied first,
    /// its capacity kept: a connection's requests reuse one buffer). An
    /// absolute-form target (`http://host:8080/healthz`, as clients send to
    /// proxies) means its path; its authority is not ours to check (RFC 9112 §3.2.2).
    static func path(_ target: UnsafePointer<CChar>, into path: inout [UInt8]) {
        let text = UnsafeBufferPointer(start: UnsafeRawPointer(target).assumingMemoryBound(to: UInt8.self),
                                       count: strlen(target))
        path.removeAll(keepingCapacity: true)
        guard let first = text.first, first != UInt8(ascii: "/") else { return path.append(contentsOf: text) }
        func startsWith(_ scheme: StaticString) -> Bool {
            text.count >= scheme.utf8CodeUnitCount && UnsafeBufferPointer(rebasing: text.prefix(scheme.utf8CodeUnitCount))
                .caseInsensitiveEquals(UnsafeBufferPointer(start: scheme.utf8Start, count: scheme.utf8CodeUnitCount))
        }
        let schemeLength = startsWith("http://") ? 7 : startsWith("https://") ? 8 : 0
        guard schemeLength > 0 else { return path.append(contentsOf: text) }
        let authorityAndPath = text[schemeLength...]
        guard let slash = authorityAndPath.firstIndex(of: UInt8(ascii: "/")) else { return path.append(UInt8(ascii: "/")) }
        path.append(contentsOf: UnsafeBufferPointer(rebasing: text[slash...]))
    }

    private static func matches(_ text: UnsafePointer<CChar>, _ count: Int, _ token: StaticString) -> Bool {
        count == token.utf8CodeUnitCount && memcmp(text, token.utf8Start, count) == 0
    }

    /// A `Content-Length` value's leading digits as a number, `Int.max`
    /// when too long for one; nil without a leading digit. libmicrohttpd
    /// refuses a malformed value (400) before the handler runs.
    static func leadingDecimal(_ text: UnsafeBufferPointer<UInt8>) -> Int? {
        guard let first = text.first, first >= UInt8(ascii: "0"), first <= UInt8(ascii: "9") else { return nil }
        var value = 0
        for byte in text {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { break }
            let (tens, overflowed) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflowedToo) = tens.addingReportingOverflow(Int(byte - UInt8(ascii: "0")))
            if overflowed || overflowedToo { return .max }
            value = sum
        }
        return value
    }
}
