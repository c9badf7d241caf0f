import Foundation

/// The `request` target's input: up to `maxRequests` HTTP requests as text,
/// so seeds can be written by hand (see Fuzz/README.md):
///
///     METHOD PATH [VERSION]          (VERSION defaults to HTTP/1.1)
///     Name: value                    (any number of header lines)
///                                    (a blank line)
///     body bytes                     (up to the next separator or the end)
///     ===                            (a line of its own: the next request follows)
///
/// Lines end with LF (a CR before it is dropped; a bare CR stays in the
/// line). Bytes after a NUL in the request line or a header are dropped,
/// invalid UTF-8 there is repaired, and a line led by a space or tab is
/// appended to the previous field's name, as happens to what libmicrohttpd
/// 0.9.75 hands the server. The body is
/// raw bytes. In the path and in header values `{s0}`, `{s1}`, `{gone}` and
/// `{new}` stand for session ids (see `RequestTarget`).
struct ScriptedRequest {
    var method: String
    var path: String
    var version: String
    var headers: [(String, String)]
    var body: [UInt8]
}

enum RequestScript {
    static let maxRequests = 6
    static let separator = Array("\n===\n".utf8)

    static func decode(_ bytes: [UInt8]) -> [ScriptedRequest] {
        var requests: [ScriptedRequest] = []
        var rest = bytes[...]
        while requests.count < maxRequests {
            if let cut = firstRange(of: separator, in: rest) {
                requests.append(request(rest[..<cut.lowerBound]))
                rest = rest[cut.upperBound...]
            } else {
                requests.append(request(rest))
                break
            }
        }
        return requests
    }

    private static func request(_ bytes: ArraySlice<UInt8>) -> ScriptedRequest {
        var lines: [ArraySlice<UInt8>] = []
        var body: [UInt8] = []
        var start = bytes.startIndex
        while start < bytes.endIndex {
            let end = bytes[start...].firstIndex(of: 0x0A) ?? bytes.endIndex
            var line = bytes[start..<end]
            if line.last == 0x0D { line = line.dropLast() }
            if line.isEmpty && !lines.isEmpty {
                body = end < bytes.endIndex ? Array(bytes[(end + 1)...]) : []
                break
            }
            lines.append(line)
            start = end < bytes.endIndex ? end + 1 : end
        }
        let requestLine = (lines.first ?? [])
            .split(separator: 0x20, maxSplits: 2, omittingEmptySubsequences: false)
        let method = requestLine.first.map(text) ?? ""
        let path = requestLine.count > 1 ? text(requestLine[1]) : "/"
        let version = requestLine.count > 2 ? text(requestLine[2]) : "HTTP/1.1"
        var headers: [(String, String)] = []
        for line in lines.dropFirst() {
            if let first = line.first, first == 0x20 || first == 0x09, !headers.isEmpty {
                // A continuation line (obs-fold): libmicrohttpd 0.9.75 appends it,
                // without its leading whitespace, to the previous field's name.
                headers[headers.count - 1].0 += text(line.drop { $0 == 0x20 || $0 == 0x09 })
                continue
            }
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
                headers.append((text(line), ""))
                continue
            }
            headers.append((text(line[..<colon]), text(trimmed(line[(colon + 1)...]))))
        }
        return ScriptedRequest(method: method, path: path, version: version, headers: headers, body: body)
    }

    /// As a C string would give it: up to the first NUL, invalid UTF-8 repaired.
    static func text(_ bytes: ArraySlice<UInt8>) -> String {
        let end = bytes.firstIndex(of: 0) ?? bytes.endIndex
        return String(decoding: bytes[..<end], as: UTF8.self)
    }

    /// Without leading and trailing spaces and tabs, as HTTP reads field values.
    private static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var slice = bytes
        while let first = slice.first, first == 0x20 || first == 0x09 { slice = slice.dropFirst() }
        while let last = slice.last, last == 0x20 || last == 0x09 { slice = slice.dropLast() }
        return slice
    }

    private static func firstRange(of needle: [UInt8], in haystack: ArraySlice<UInt8>) -> Range<Int>? {
        guard haystack.count >= needle.count else { return nil }
        var index = haystack.startIndex
        while index + needle.count <= haystack.endIndex {
            if haystack[index] == needle[0], haystack[index..<index + needle.count].elementsEqual(needle) {
                return index..<index + needle.count
            }
            index += 1
        }
        return nil
    }
}
