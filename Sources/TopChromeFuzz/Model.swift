import StrictJSON
import TopChromeCore

// A reference model of the v1 API, written from the README and openapi.yaml
// rather than from the production code, for the `request` and `body`
// targets to compare the real `SessionAPI` with. Where the standards leave
// room (odd but harmless syntax) the model says `either` and both answers pass.

/// A yes/no the model may leave open.
enum Decision: Equatable {
    case yes, no, either

    init(_ flag: Bool) { self = flag ? .yes : .no }
}

/// Runs a model once per combination of its open decisions and collects the outcomes.
struct Chooser {
    private var prefix: [Bool]
    private(set) var taken: [Bool] = []

    init(prefix: [Bool]) { self.prefix = prefix }

    mutating func callAsFunction(_ decision: Decision) -> Bool {
        switch decision {
        case .yes: return true
        case .no: return false
        case .either:
            let choice = taken.count < prefix.count ? prefix[taken.count] : false
            taken.append(choice)
            return choice
        }
    }

    static func all<Outcome: Hashable>(_ model: (inout Chooser) -> Outcome) -> Set<Outcome> {
        var outcomes = Set<Outcome>()
        var queue: [[Bool]] = [[]]
        while let prefix = queue.popLast() {
            var chooser = Chooser(prefix: prefix)
            outcomes.insert(model(&chooser))
            for index in prefix.count..<chooser.taken.count {
                queue.append(Array(chooser.taken[..<index]) + [!chooser.taken[index]])
            }
        }
        return outcomes
    }
}

extension String {
    var isPlainASCII: Bool { utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F || $0 == 0x09 } }


}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs (HTTP's OWS).
    var withoutOWS: SubSequence {
        var text = self[...]
        while text.first == " " || text.first == "\t" { text = text.dropFirst() }
        while text.last == " " || text.last == "\t" { text = text.dropLast() }
        return text
    }

    var asciiLowercased: String {
        String(decoding: utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }, as: UTF8.self)
    }
}

enum HTTPModel {
    enum Resource: Equatable {
        case sessions, session, inset, scroll, disappear, events, health, readiness, openAPI, metrics, demo

        var allowed: [String] {
            switch self {
            case .sessions, .scroll, .disappear: ["POST"]
            case .session: ["GET", "HEAD", "DELETE"]
            case .inset: ["PUT"]
            case .events, .health, .readiness, .openAPI, .metrics, .demo: ["GET", "HEAD"]
            }
        }

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

        var takesBody: Bool { [.sessions, .inset, .scroll, .disappear].contains(self) }

        /// Whether the path holds a session id (`/v1/sessions/{id}…`).
        var namesSession: Bool { [.session, .inset, .scroll, .disappear, .events].contains(self) }
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
            case "scroll": return (.scroll, id)
            case "disappear": return (.disappear, id)
            case "events": return (.events, id)
            default: return nil
            }
        default: return nil
        }
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

/// The request bodies, from the README and openapi.yaml.
enum BodyModel {
    private static func parse(_ body: [UInt8]) -> JSONValue? {
        try? JSONReader.parse(body)
    }

    /// POST /v1/sessions: nothing, `{}` or `{"inset": n}`; nil when refused.
    /// White space alone is not "nothing" but malformed JSON.
    static func newSession(_ body: [UInt8]) -> Double? {
        if body.isEmpty { return 0 }
        guard case let .object(members)? = parse(body), Set(members.keys).isSubset(of: ["inset"]) else { return nil }
        guard let value = members["inset"] else { return 0 }
        return inset(value)
    }

    /// PUT …/inset: `{"inset": n}`, 0 ≤ n ≤ 10000.
    static func inset(_ body: [UInt8]) -> Double? {
        guard case let .object(members)? = parse(body), Set(members.keys) == ["inset"] else { return nil }
        return inset(members["inset"]!)
    }

    private static func inset(_ value: JSONValue) -> Double? {
        guard case let .number(number, _) = value, number >= 0, number <= 10_000 else { return nil }
        return number
    }

    /// POST …/disappear: nothing or `{}` (white space alone is malformed JSON).
    static func disappear(_ body: [UInt8]) -> Bool {
        if body.isEmpty { return true }
        guard case let .object(members)? = parse(body) else { return false }
        return members.isEmpty
    }

    /// POST …/scroll: one report or an array of 1…1024.
    static func scroll(_ body: [UInt8]) -> [ScrollReport]? {
        guard let value = parse(body) else { return nil }
        guard case let .array(elements) = value else { return report(value).map { [$0] } }
        guard (1...1024).contains(elements.count) else { return nil }
        var reports: [ScrollReport] = []
        for element in elements {
            guard let report = report(element) else { return nil }
            reports.append(report)
        }
        return reports
    }

    private static func report(_ value: JSONValue) -> ScrollReport? {
        guard case let .object(members) = value,
              Set(members.keys).isSubset(of: ["contentOffsetY", "contentInsetTop", "axis", "seq"]),
              case let .number(offset, _)? = members["contentOffsetY"], offset.isFinite else { return nil }
        var report = ScrollReport(contentOffsetY: offset)
        if let insetTop = members["contentInsetTop"] {
            guard case let .number(number, _) = insetTop, number.isFinite else { return nil }
            report.contentInsetTop = number
        }
        if let axis = members["axis"] {
            switch axis {
            case .string("vertical"): report.axis = .vertical
            case .string("horizontal"): report.axis = .horizontal
            default: return nil
            }
        }
        if let seq = members["seq"] {
            // An integer 0 … 2^53 - 1, judged by the literal's exact decimal
            // value: 5, 5.0, 5e0, 50e-1 and -0 count; 1e-400 is no integer.
            guard case let .number(_, literal) = seq, let value = wholeNumber(literal),
                  value <= 9_007_199_254_740_991 else { return nil }
            report.seq = value
        }
        return report
    }

    /// The literal's value if it is a whole number below 10^19, read as
    /// decimal text: the digits with the point moved `exponent` places.
    static func wholeNumber(_ literal: String) -> UInt64? {
        let lowered = literal.lowercased()
        let parts = lowered.split(separator: "e", omittingEmptySubsequences: false)
        var mantissa = String(parts[0]), exponent = 0
        if parts.count == 2 {
            let text = parts[1].drop { $0 == "+" }
            let digits = text.drop { $0 == "-" }.drop { $0 == "0" }
            guard digits.count <= 5 else {
                // 10^±100000 or beyond: only a zero mantissa makes that a small whole number.
                return mantissa.allSatisfy { "-0.".contains($0) } ? 0 : nil
            }
            exponent = (Int(digits) ?? 0) * (text.hasPrefix("-") ? -1 : 1)
        }
        let isNegative = mantissa.hasPrefix("-")
        if isNegative { mantissa.removeFirst() }
        let point = mantissa.firstIndex(of: ".")
        let whole = point.map { String(mantissa[..<$0]) } ?? mantissa
        let fraction = point.map { String(mantissa[mantissa.index(after: $0)...]) } ?? ""
        var digits = whole + fraction
        exponent -= fraction.count
        if exponent > 0 {
            guard exponent <= 40 else { return digits.allSatisfy { $0 == "0" } ? 0 : nil }
            digits += String(repeating: "0", count: exponent)
        } else if exponent < 0 {
            let cut = digits.count + exponent
            guard digits.suffix(-exponent).allSatisfy({ $0 == "0" }) else { return nil }
            digits = cut > 0 ? String(digits.prefix(cut)) : "0"
        }
        let significant = digits.drop { $0 == "0" }
        if significant.isEmpty { return 0 }
        guard !isNegative, significant.count <= 19 else { return nil }
        return UInt64(significant)
    }
}

/// The README's rules, applied to a state.
enum RulesModel {
    enum Input {
        case scroll(ScrollReport), inset(Double), disappear
    }

    static func apply(_ inputs: [Input], to state: ChromeState, threshold: Double) -> ChromeState {
        var inset = state.inset, revealed = state.isRevealed, version = state.version
        var lastSeq = state.lastAppliedSeq
        func set(inset newInset: Double? = nil, revealed newRevealed: Bool? = nil) {
            let nextInset = newInset ?? inset, nextRevealed = newRevealed ?? revealed
            guard nextInset != inset || nextRevealed != revealed else { return }
            inset = nextInset
            revealed = nextRevealed
            version += 1
        }
        for input in inputs {
            switch input {
            case let .scroll(report):
                if let seq = report.seq {
                    if let last = lastSeq, seq <= last { continue }  // stale: ignored
                    lastSeq = seq
                }
                if report.axis == .vertical {
                    set(revealed: report.contentOffsetY + report.contentInsetTop <= threshold)
                }
            case let .inset(value): set(inset: value)
            case .disappear: set(revealed: true)
            }
        }
        return ChromeState(inset: inset, isRevealed: revealed, version: version, lastAppliedSeq: lastSeq)
    }
}
