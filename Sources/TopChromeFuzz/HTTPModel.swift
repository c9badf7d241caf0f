import TopChromeCore

enum HTTPModel {
    enum Resource: Equatable {
        case sessions, session, inset, behavior, scroll, disappear, events, socket, health, readiness, openAPI, metrics, demo
        /// Minting's paths: `/v1/sessions/{id}/tokens` and `/.well-known/jwks.json`.
        case tokens, keySet

        var allowed: [String] {
            switch self {
            case .sessions, .scroll, .disappear, .tokens: ["POST"]
            case .session: ["GET", "HEAD", "DELETE"]
            case .inset, .behavior: ["PUT"]
            case .events, .health, .readiness, .openAPI, .metrics, .demo, .keySet: ["GET", "HEAD"]
            case .socket: ["GET"]
            }
        }

        /// Paths of a server with `--token-signing-key`: 404 to their own methods without one.
        var isMinting: Bool { self == .tokens || self == .keySet }

        /// The Content-Type of a 200 from a resource that is not a session's state.
        var contentType: String? {
            switch self {
            case .health, .readiness: "application/json"
            case .openAPI: "application/yaml"
            case .metrics: "text/plain; version=0.0.4; charset=utf-8"
            case .demo: "text/html; charset=utf-8"
            case .events: "text/event-stream"
            default: nil
            }
        }

        var takesBody: Bool { [.sessions, .inset, .behavior, .scroll, .disappear].contains(self) }

        /// Whether the path holds a session id (`/v1/sessions/{id}…`).
        var namesSession: Bool { [.session, .inset, .behavior, .scroll, .disappear, .events, .socket, .tokens].contains(self) }
    }

    /// The resource at `path` and, under `/v1/sessions/`, the id (nil when
    /// malformed). Paths are bytes: `/` separates segments whatever follows
    /// it (a combining mark after `/` must not hide it).
    static func resource(_ path: String) -> (Resource, SessionID?)? {
        switch path {
        case "/v1/sessions": return (.sessions, nil)
        case "/healthz": return (.health, nil)
        case "/readyz": return (.readiness, nil)
        case "/openapi.yaml": return (.openAPI, nil)
        case "/metrics": return (.metrics, nil)
        case "/": return (.demo, nil)
        case "/.well-known/jwks.json": return (.keySet, nil)
        default: break
        }
        let bytes = Array(path.utf8), prefix = Array("/v1/sessions/".utf8)
        guard bytes.starts(with: prefix) else { return nil }
        let parts = bytes.dropFirst(prefix.count).split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        guard let idBytes = parts.first, !idBytes.isEmpty else { return nil }
        let id = sessionID(idBytes)
        switch parts.count {
        case 1: return (.session, id)
        case 2:
            switch String(decoding: parts[1], as: UTF8.self) {
            case "inset": return (.inset, id)
            case "behavior": return (.behavior, id)
            case "scroll": return (.scroll, id)
            case "disappear": return (.disappear, id)
            case "events": return (.events, id)
            case "socket": return (.socket, id)
            case "tokens": return (.tokens, id)
            default: return nil
            }
        default: return nil
        }
    }

    /// What RFC 6455 §4.2.1 asks of an opening handshake, as docs/http.md
    /// words the refusals: nil for one the server takes, else its status.
    static func handshakeRefusal(_ headers: [(String, String)]) -> Int? {
        func tokens(_ name: String) -> [String] {
            (combined(headers, name) ?? "").lowercased().split(separator: ",")
                .map { String($0.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed()) }
        }
        guard tokens("Upgrade").contains("websocket"), tokens("Connection").contains("upgrade") else { return 426 }
        guard tokens("Sec-WebSocket-Version") == ["13"] else { return 426 }
        let key = Array((tokens("Sec-WebSocket-Key").count == 1 ? combined(headers, "Sec-WebSocket-Key") ?? "" : "")
            .utf8.drop { $0 == 0x20 || $0 == 0x09 }.reversed().drop { $0 == 0x20 || $0 == 0x09 }.reversed())
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        guard key.count == 24, key[22...] == [0x3D, 0x3D], key[..<22].allSatisfy(alphabet.contains) else { return 400 }
        return nil
    }

    /// 32 lowercase hex digits, as the README says ids are written; all
    /// zeros is no id (openapi.yaml).
    static func sessionID(_ text: some Collection<UInt8>) -> SessionID? {
        let hex = Array(text)
        guard hex.count == 32, hex.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }),
              hex.contains(where: { $0 != 0x30 }) else {
            return nil
        }
        func value(_ digits: ArraySlice<UInt8>) -> UInt64 {
            digits.reduce(0) { $0 << 4 | UInt64($1 <= 0x39 ? $1 - 0x30 : $1 - 0x61 + 10) }
        }
        return SessionID(high: value(hex[0..<16]), low: value(hex[16..<32]))
    }

    static func header(_ headers: [(String, String)], _ name: String) -> String? {
        headers.first { $0.0.asciiLowercased == name.asciiLowercased }?.1
    }

    /// All lines of a field joined by ", " (RFC 9110 §5.3).
    static func combined(_ headers: [(String, String)], _ name: String) -> String? {
        let values = headers.filter { $0.0.asciiLowercased == name.asciiLowercased }.map(\.1)
        return values.isEmpty ? nil : values.joined(separator: ", ")
    }

    /// `application/json` or `application/<name>+json`, any parameters.
    static func isJSON(_ contentType: String) -> Decision {
        guard contentType.isPlainASCII else { return .either }
        let mediaType = String((contentType.split(separator: ";", omittingEmptySubsequences: false).first ?? "")
            .withoutOWS).asciiLowercased
        if mediaType.isEmpty || mediaType == "application/+json" { return .either }
        return Decision(mediaType == "application/json"
                        || (mediaType.hasPrefix("application/") && mediaType.hasSuffix("+json")))
    }

    /// An `If-Match`/`If-None-Match` field (RFC 9110 §13.1.1/2): `*`, or a
    /// list of entity tags compared as strings with the state's
    /// `<version>.<tag>`. `strictTags` off lets a numeric reading of the
    /// version (`"03.<tag>"` and `"+3.<tag>"` as 3) pass.
    struct TagList {
        var isAny = false
        var tags: [(weak: Bool, opaque: Substring)] = []
        var isASCII: Bool

        init(_ field: String) {
            isASCII = field.isPlainASCII
            for element in field.split(separator: ",", omittingEmptySubsequences: false) {
                var tag = element.withoutOWS
                if tag == "*" { isAny = true }
                let weak = tag.hasPrefix("W/")
                if weak { tag = tag.dropFirst(2) }
                guard tag.count >= 2, tag.first == "\"", tag.last == "\"" else { continue }
                let opaque = tag.dropFirst().dropLast()
                guard !opaque.contains("\"") else { continue }
                tags.append((weak, opaque))
            }
        }

        /// Whether `etag` (`<version>.<tag>`) is listed; strong only, or weak too.
        func lists(_ etag: String, allowWeak: Bool, strictTags: Bool) -> Decision {
            let exact = tags.contains { (allowWeak || !$0.weak) && $0.opaque == etag }
            let parts = etag.split(separator: ".")
            let numeric = tags.contains { listed in
                let listedParts = listed.opaque.split(separator: ".", omittingEmptySubsequences: false)
                return (allowWeak || !listed.weak) && listedParts.count == 2 && listedParts[1] == parts[1]
                    && UInt64(listedParts[0]) == UInt64(parts[0])
            }
            if !isASCII && !exact { return .either }
            if !strictTags && numeric != exact { return .either }
            return Decision(exact)
        }
    }

    /// Whether a field is `*` or a list of entity tags at all (RFC 9110
    /// §8.8.3: `W/` optional, a quoted string of visible characters but the
    /// quote); a field that is not gets 400. Outside plain ASCII (obs-text)
    /// either answer is allowed.
    static func tagsWellFormed(_ field: String?) -> Decision {
        guard let field else { return .yes }
        guard field.isPlainASCII else { return .either }
        let space: Set<Unicode.Scalar> = [" ", "\t"]
        var rest = Substring(field).unicodeScalars[...]
        while true {
            rest = rest.drop { space.contains($0) || $0 == "," }
            guard let first = rest.first else { return .yes }
            if first == "*" {
                rest = rest.dropFirst()
            } else {
                if rest.starts(with: "W/".unicodeScalars) { rest = rest.dropFirst(2) }
                guard rest.first == "\"" else { return .no }
                rest = rest.dropFirst()
                guard let close = rest.firstIndex(of: "\"") else { return .no }
                guard rest[..<close].allSatisfy({ $0.value == 0x21 || (0x23...0x7E).contains($0.value) }) else { return .no }
                rest = rest[rest.index(after: close)...]
            }
            rest = rest.drop { space.contains($0) }
            guard rest.isEmpty || rest.first == "," else { return .no }
        }
    }

    static func ifMatchHolds(_ field: String?, etag: String, strictTags: Bool) -> Decision {
        guard let field else { return .yes }
        let list = TagList(field)
        if list.isAny { return .yes }
        return list.lists(etag, allowWeak: false, strictTags: strictTags)
    }

    static func ifNoneMatchHolds(_ field: String?, etag: String, strictTags: Bool) -> Decision {
        guard let field else { return .yes }
        let list = TagList(field)
        if list.isAny { return .no }
        switch list.lists(etag, allowWeak: true, strictTags: strictTags) {
        case .yes: return .no
        case .no: return .yes
        case .either: return .either
        }
    }

    /// `Prefer: wait=N` with N > 0 (RFC 7240): `wait=DIGITS` or
    /// `wait="DIGITS"`, parameters after `;` allowed; however many digits
    /// (a wait longer than `--max-wait` waits that long). Other spellings
    /// (signs, a name that only contains "wait", repeats) are left open.
    static func wantsWait(_ field: String?) -> Decision {
        guard let field else { return .no }
        guard field.isPlainASCII else { return .either }
        var decision: Decision?
        for element in field.split(separator: ",", omittingEmptySubsequences: false) {
            let preference = element.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false)[0]
            let parts = preference.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts[0].withoutOWS.asciiLowercased == "wait" else {
                if element.asciiLowercased.contains("wait") { decision = .either }
                continue
            }
            guard parts.count == 2 else { decision = .either; continue }
            var value = parts[1].withoutOWS
            if value.count >= 2, value.first == "\"", value.last == "\"" { value = value.dropFirst().dropLast() }
            let this: Decision
            if !value.isEmpty, value.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
                this = Decision(value.utf8.contains { $0 != 0x30 })
            } else {
                this = .either
            }
            // RFC 7240: only the first instance of a preference counts.
            if decision == nil { decision = this } else if decision != this { decision = .either }
        }
        return decision ?? .no
    }

    /// `Authorization: Bearer <token>` (RFC 6750 §2.1): the scheme in any
    /// case, one or more spaces, the token exactly; white space around the
    /// field value is not part of it (RFC 9110 §5.5). Non-ASCII is left open.
    static func authorized(_ field: String?, token: String) -> Decision {
        guard let field else { return .no }
        guard field.isPlainASCII else { return .either }
        let value = field.withoutOWS
        guard let space = value.firstIndex(of: " ") else { return .no }
        let scheme = value[..<space], credentials = value[space...].drop { $0 == " " }
        return Decision(scheme.asciiLowercased == "bearer" && credentials == token)
    }
}
