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
