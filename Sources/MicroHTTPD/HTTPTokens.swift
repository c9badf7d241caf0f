#if canImport(Glibc)
import Glibc
#endif

/// The request line's tokens as strings, made cheaply: the usual methods and
/// versions are the same few every time, and a literal costs no allocation.
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

    /// The path of a request target as sent. An absolute-form target
    /// (`http://host:8080/healthz`, as clients send to proxies) means its
    /// path; its authority is not ours to check (RFC 9112 §3.2.2).
    static func path(_ target: UnsafePointer<CChar>) -> String {
        let text = String(cString: target)
        guard target[0] != CChar(UInt8(ascii: "/")) else { return text }
        let scheme = text.utf8.prefix(8).map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }
        let schemeLength = scheme.starts(with: "http://".utf8) ? 7 : scheme.starts(with: "https://".utf8) ? 8 : 0
        guard schemeLength > 0 else { return text }
        let authorityAndPath = text.utf8.dropFirst(schemeLength)
        guard let slash = authorityAndPath.firstIndex(of: UInt8(ascii: "/")) else { return "/" }
        return String(text[slash...])
    }

    private static func matches(_ text: UnsafePointer<CChar>, _ count: Int, _ token: StaticString) -> Bool {
        count == token.utf8CodeUnitCount && memcmp(text, token.utf8Start, count) == 0
    }

    /// Whether a `Content-Length` value's leading digits exceed `limit`.
    /// libmicrohttpd refuses a malformed value (400) before the handler runs.
    static func exceeds(_ text: UnsafePointer<CChar>, _ limit: Int) -> Bool {
        var value = 0, index = 0
        while true {
            let byte = UInt8(bitPattern: text[index])
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return false }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
            if value > limit { return true }
            index += 1
        }
    }
}
