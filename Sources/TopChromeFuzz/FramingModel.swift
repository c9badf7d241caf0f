/// How a request's body is framed, from its head (RFC 9112 §3.2, §5.1,
/// §6). The rule: no byte of a body is ever routed. A framer in front of
/// the server (a proxy) may read the body's length differently from the
/// server; wherever two readings are possible, the bytes one calls body the
/// other calls the next request. So a head that allows more than one
/// reading, or none the server can decode, must be refused before the API
/// sees it, and the connection closed: nothing after that head is read.
enum FramingModel {
    /// Each way a framer could read the body's length: every field whose
    /// name, trimmed and lowercased as a lenient framer reads it, is
    /// `content-length` gives its value; `transfer-encoding` in HTTP/1.1
    /// means chunks (an HTTP/1.0 framer ignores it); none, an empty body.
    /// A value with a CR or LF in it is read both whole and cut into lines
    /// there; a name that extends a framing name (libmicrohttpd 0.9.75
    /// appends a folded continuation line to the name: `Content-Length74: 0`)
    /// both as some other field and as that field with the line unfolded.
    static func readings(_ headers: [(String, String)], version: String) -> Set<String> {
        var readings = Set<String>()
        for fields in [headers, splitAtLineBreaks(headers)] {
            for unfolds in [false, true] {
                readings.insert(reading(fields, version: version, unfolds: unfolds))
            }
        }
        return readings
    }

    private static func reading(_ headers: [(String, String)], version: String, unfolds: Bool) -> String {
        var readings = Set<String>()
        for (name, value) in headers {
            let lowered = String(name.withoutOWS).asciiLowercased
            switch lowered {
            case "content-length": readings.insert("length " + value)
            case "transfer-encoding": readings.insert(version == "HTTP/1.0" ? "none" : "chunks")
            case _ where unfolds && lowered.hasPrefix("content-length"):
                readings.insert("length " + value + " " + lowered.dropFirst("content-length".count))
            case _ where unfolds && lowered.hasPrefix("transfer-encoding"):
                readings.insert(version == "HTTP/1.0" ? "none" : "chunks")
            default: break
            }
        }
        return readings.isEmpty ? "none" : readings.sorted().joined(separator: " | ")
    }

    /// The fields as a framer that ends lines at a bare CR (or LF) reads them.
    private static func splitAtLineBreaks(_ headers: [(String, String)]) -> [(String, String)] {
        headers.flatMap { name, value -> [(String, String)] in
            let lines = value.split(omittingEmptySubsequences: false) { $0 == "\r" || $0 == "\n" || $0 == "\r\n" }
            return [(name, String(lines[0]))] + lines.dropFirst().map { line in
                guard let colon = line.firstIndex(of: ":") else { return (String(line), "") }
                return (String(line[..<colon]), String(line[line.index(after: colon)...].withoutOWS))
            }
        }
    }

    /// The status of the refusal the head calls for, or nil when the server must read it.
    static func refusal(_ headers: [(String, String)], version: String) -> Int? {
        let tchars = Set("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8)
        func fields(_ name: String) -> [String] {
            headers.filter { $0.0.asciiLowercased == name }.map(\.1)
        }
        let lengths = fields("content-length"), encodings = fields("transfer-encoding"), hosts = fields("host")
        if headers.contains(where: { $0.0.isEmpty || !$0.0.utf8.allSatisfy(tchars.contains) }) { return 400 }
        // A framing field folded onto the next line, as libmicrohttpd hands it over (see `readings`).
        if headers.contains(where: { field in
            let name = field.0.asciiLowercased
            return ["content-length", "transfer-encoding"].contains { name.hasPrefix($0) && name.count > $0.count }
        }) { return 400 }
        if headers.contains(where: { $0.1.utf8.contains(13) || $0.1.utf8.contains(10) }) { return 400 }
        if let length = lengths.first, !length.withoutOWS.utf8.allSatisfy({ (48...57).contains($0) }) || length.withoutOWS.isEmpty {
            return 400
        }
        if lengths.count > 1 || hosts.count > 1 || (hosts.isEmpty && version == "HTTP/1.1") { return 400 }
        guard !encodings.isEmpty else { return nil }
        if !lengths.isEmpty || version == "HTTP/1.0" { return 400 }
        let codings = encodings.joined(separator: ",").split(separator: ",").map { String($0.withoutOWS).asciiLowercased }
            .filter { !$0.isEmpty }
        // chunked last and once, or the end of the body is unknowable; a
        // lone `chunked` is all the server decodes (anything else: 501).
        if codings.last != "chunked" || codings.dropLast().contains("chunked") { return 400 }
        return encodings.count == 1 && encodings[0].asciiLowercased == "chunked" ? nil : 501
    }
}
