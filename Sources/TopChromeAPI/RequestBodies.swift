import StrictJSON
import TopChromeCore

/// Why a request body was refused; becomes a 400 problem.
struct BodyError: Error, Equatable {
    let detail: String
}

/// The request bodies of the v1 API, read strictly: unknown fields, `null`,
/// wrong types, non-finite or out-of-range numbers are all refused, so a
/// client's mistake surfaces at once instead of being half-applied.
enum RequestBodies {
    /// Reports in one scroll request at most.
    static let maxBatchCount = 1024

    /// `{"inset": n}`, required.
    static func inset(_ body: [UInt8]) throws(BodyError) -> Double {
        try inset(parsed: try parse(body))
    }

    /// The readings below take a body already parsed (nil: none), as a
    /// WebSocket message carries it, so both transports check it alike.
    static func inset(parsed body: JSONValue?) throws(BodyError) -> Double {
        let members = try object(try required(body), context: "the body")
        try rejectUnknown(members, allowed: insetFields, context: "the body")
        guard let value = members["inset"] else { throw BodyError(detail: "\"inset\" is required") }
        return try inset(value)
    }

    /// Nothing, `{}`, or any of `inset`, `behavior`, `collapsibleHeight` and `snap`.
    static func newSession(_ body: [UInt8]) throws(BodyError) -> (inset: Double, settings: RevealSettings) {
        guard let value = try parse(body) else { return (0, RevealSettings()) }
        let members = try object(value, context: "the body")
        try rejectUnknown(members, allowed: newSessionFields, context: "the body")
        let given = try members["inset"].map { v throws(BodyError) in try inset(v) } ?? 0
        return (given, try settings(members, behaviorRequired: false))
    }

    /// `{"behavior": "…", "collapsibleHeight": n, "snap": b}`, the behaviour required:
    /// a PUT names the whole choice, and what it leaves out takes its default.
    static func behavior(_ body: [UInt8]) throws(BodyError) -> RevealSettings {
        try behavior(parsed: try parse(body))
    }

    static func behavior(parsed body: JSONValue?) throws(BodyError) -> RevealSettings {
        let members = try object(try required(body), context: "the body")
        try rejectUnknown(members, allowed: behaviorFields, context: "the body")
        return try settings(members, behaviorRequired: true)
    }

    private static func settings(_ members: [String: JSONValue], behaviorRequired: Bool) throws(BodyError) -> RevealSettings {
        var settings = RevealSettings()
        if let behavior = members["behavior"] {
            guard case let .string(name) = behavior, let parsed = RevealBehavior(rawValue: name) else {
                let names = RevealBehavior.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")
                throw BodyError(detail: "\"behavior\" must be one of \(names)")
            }
            settings.behavior = parsed
        } else if behaviorRequired {
            throw BodyError(detail: "\"behavior\" is required")
        }
        if let height = members["collapsibleHeight"] {
            let range = RevealSettings.allowedCollapsibleHeights
            guard case let .number(number, _) = height, number.isFinite,
                  (Double(range.lowerBound)...Double(range.upperBound)).contains(number) else {
                throw BodyError(detail: "\"collapsibleHeight\" must be a number from \(Int(range.lowerBound)) to \(Int(range.upperBound))")
            }
            settings.collapsibleHeight = Float(number)
        }
        if let snap = members["snap"] {
            guard case let .bool(value) = snap else { throw BodyError(detail: "\"snap\" must be true or false") }
            settings.snap = value
        }
        return settings
    }

    /// Nothing or `{}`.
    static func disappear(_ body: [UInt8]) throws(BodyError) {
        try disappear(parsed: try parse(body))
    }

    static func disappear(parsed body: JSONValue?) throws(BodyError) {
        guard let value = body else { return }
        try rejectUnknown(try object(value, context: "the body"), allowed: [], context: "the body")
    }

    /// `{"scope": "read"|"write", "ttl": seconds}`: what a minted token may
    /// do, and for how long. A longer `ttl` than `maxLifetime` gets the cap
    /// (the answer's `expiresAt` says so), as does none: the operator's cap
    /// bounds the lifetime, the asker need not know it.
    static func tokenRequest(_ body: [UInt8], maxLifetime: Int) throws(BodyError) -> (scope: String, lifetime: Int) {
        let members = try object(try required(try parse(body)), context: "the body")
        try rejectUnknown(members, allowed: tokenRequestFields, context: "the body")
        guard case let .string(scope)? = members["scope"], scope == "read" || scope == "write" else {
            throw BodyError(detail: "\"scope\" is required, \"read\" or \"write\"")
        }
        guard let ttl = members["ttl"] else { return (scope, maxLifetime) }
        guard case let .number(seconds, _) = ttl, seconds.rounded() == seconds, seconds >= 1 else {
            throw BodyError(detail: "\"ttl\" must be a whole number of seconds, at least 1")
        }
        return (scope, Int(min(seconds, Double(maxLifetime))))
    }

    /// One report, or an array of 1…1024. All are checked before any is
    /// applied, so a batch with one bad report changes nothing.
    static func scrollInputs(_ body: [UInt8]) throws(BodyError) -> ScrollBody<ChromeInput> {
        if let inputs = ScrollReportFastPath.read(body, as: ChromeInput.scroll) { return inputs }
        return .batch(try strictScrollReports(body).map(ChromeInput.scroll))
    }

    /// The reference reading of scroll reports: every case, every error.
    static func strictScrollReports(_ body: [UInt8]) throws(BodyError) -> [ScrollReport] {
        try scrollReports(parsed: try parse(body))
    }

    static func scrollReports(parsed body: JSONValue?) throws(BodyError) -> [ScrollReport] {
        let value = try required(body)
        guard case let .array(elements) = value else {
            return [try scrollReport(value, index: nil)]
        }
        guard !elements.isEmpty else { throw BodyError(detail: "a batch needs at least one report") }
        guard elements.count <= maxBatchCount else {
            throw BodyError(detail: "a batch holds at most \(maxBatchCount) reports, this one has \(elements.count)")
        }
        var reports: [ScrollReport] = []
        reports.reserveCapacity(elements.count)
        for (index, element) in elements.enumerated() {
            reports.append(try scrollReport(element, index: index))
        }
        return reports
    }

    private static let reportFields: Set<String> = [
        "contentOffsetY", "contentInsetTop", "axis", "seq", "phase", "contentHeight", "viewportHeight",
    ]
    private static let insetFields: Set<String> = ["inset"]
    private static let behaviorFields: Set<String> = ["behavior", "collapsibleHeight", "snap"]
    private static let newSessionFields = insetFields.union(behaviorFields)
    private static let tokenRequestFields: Set<String> = ["scope", "ttl"]

    /// - Parameter index: the report's place in a batch, for error messages.
    private static func scrollReport(_ value: JSONValue, index: Int?) throws(BodyError) -> ScrollReport {
        let context = index.map { "report [\($0)]" } ?? "the report"
        let members = try object(value, context: context)
        try rejectUnknown(members, allowed: reportFields, context: context)
        guard let offset = members["contentOffsetY"] else {
            throw BodyError(detail: "\(context): \"contentOffsetY\" is required")
        }
        var report = ScrollReport(contentOffsetY: try finite(offset, "contentOffsetY", context))
        if let insetTop = members["contentInsetTop"] {
            report.contentInsetTop = try finite(insetTop, "contentInsetTop", context)
        }
        // The rules compare the sum with the threshold. Two finite halves may
        // overflow it to an infinity of their sum's sign, which compares as
        // the exact sum would: far past the top, or far down. Accepted.
        if let axis = members["axis"] {
            guard case let .string(name) = axis, let parsed = ScrollReport.Axis(rawValue: name) else {
                throw BodyError(detail: "\(context): \"axis\" must be \"vertical\" or \"horizontal\"")
            }
            report.axis = parsed
        }
        if let seq = members["seq"] {
            report.seq = try sequenceNumber(seq, context)
        }
        if let phase = members["phase"] {
            guard case let .string(name) = phase, let parsed = ScrollReport.Phase(rawValue: name) else {
                throw BodyError(detail: "\(context): \"phase\" must be \"began\", \"changed\" or \"ended\"")
            }
            report.phase = parsed
        }
        if let height = members["contentHeight"] { report.contentHeight = try length(height, "contentHeight", context) }
        if let height = members["viewportHeight"] { report.viewportHeight = try length(height, "viewportHeight", context) }
        return report
    }

    private static func inset(_ value: JSONValue) throws(BodyError) -> Double {
        let range = ChromeState.allowedInsets
        guard case let .number(number, _) = value, number.isFinite, range.contains(number) else {
            throw BodyError(detail: "\"inset\" must be a number from \(Int(range.lowerBound)) to \(Int(range.upperBound))")
        }
        return number
    }

    private static func finite(_ value: JSONValue, _ name: String, _ context: String) throws(BodyError) -> Double {
        guard case let .number(number, _) = value else {
            throw BodyError(detail: "\(context): \"\(name)\" must be a number, not \(value.typeName)")
        }
        guard number.isFinite else { throw BodyError(detail: "\(context): \"\(name)\" must be finite") }
        return number
    }

    /// A height in points: finite and not negative.
    private static func length(_ value: JSONValue, _ name: String, _ context: String) throws(BodyError) -> Double {
        let number = try finite(value, name, context)
        guard number >= 0 else { throw BodyError(detail: "\(context): \"\(name)\" must not be negative") }
        return number
    }

    private static func sequenceNumber(_ value: JSONValue, _ context: String) throws(BodyError) -> UInt64 {
        let range = ScrollReport.allowedSeqs
        let refusal = BodyError(detail: "\(context): \"seq\" must be an integer from 0 to \(range.upperBound)")
        guard case let .number(_, literal) = value, let exact = wholeNumber(literal), range.contains(exact) else {
            throw refusal
        }
        return exact
    }

    /// The value of a JSON number literal if it is exactly a whole number
    /// (JSON Schema's integer): `5`, `5.0`, `5e0`, `0.5e1`, `50e-1`, and
    /// `-0` as 0. Read from the decimal digits, not from a `Double`, which
    /// would round `1e-400` to 0 and `9007199254740991.00000001` to a whole
    /// number. Nil for fractions, other negatives, and wholes beyond `UInt64`.
    static func wholeNumber(_ literal: String) -> UInt64? {
        var text = literal.utf8[...]
        let isNegative = text.first == UInt8(ascii: "-")
        if isNegative { text = text.dropFirst() }
        let mantissa = text.prefix { $0 != UInt8(ascii: "e") && $0 != UInt8(ascii: "E") }
        let integerPart = mantissa.prefix { $0 != UInt8(ascii: ".") }
        let fractionPart = mantissa.dropFirst(integerPart.count + 1)
        // Significant digits and the power of ten that scales them.
        var digits = Array(integerPart) + Array(fractionPart)
        var power = -fractionPart.count
        var exponentText = text.dropFirst(mantissa.count + 1)
        let isNegativeExponent = exponentText.first == UInt8(ascii: "-")
        if exponentText.first == UInt8(ascii: "-") || exponentText.first == UInt8(ascii: "+") {
            exponentText = exponentText.dropFirst()
        }
        while let first = exponentText.first, first == UInt8(ascii: "0") { exponentText = exponentText.dropFirst() }
        while let last = digits.last, last == UInt8(ascii: "0") {
            digits.removeLast()
            power += 1
        }
        while let first = digits.first, first == UInt8(ascii: "0") { digits.removeFirst() }
        if digits.isEmpty { return 0 }  // zero, however written
        guard !isNegative else { return nil }
        // Exponents beyond 6 digits make any nonzero value a fraction or far too large.
        guard exponentText.count <= 6 else { return nil }
        let exponent = exponentText.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
        power += isNegativeExponent ? -exponent : exponent
        // The last digit is not 0, so a negative power leaves a fraction.
        guard power >= 0, digits.count + power <= 20 else { return nil }
        var value: UInt64 = 0
        for digit in digits + Array(repeating: UInt8(ascii: "0"), count: power) {
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(UInt64(digit - UInt8(ascii: "0")))
            guard !overflow1, !overflow2 else { return nil }
            value = sum
        }
        return value
    }

    private static func required(_ body: JSONValue?) throws(BodyError) -> JSONValue {
        guard let value = body else { throw BodyError(detail: "a JSON body is required") }
        return value
    }

    /// nil for an empty body. White space alone is not "no body" but
    /// malformed JSON: a client that sent it meant to send something.
    private static func parse(_ body: [UInt8]) throws(BodyError) -> JSONValue? {
        if body.isEmpty { return nil }
        do {
            return try JSONReader.parse(body)
        } catch {
            throw BodyError(detail: "malformed JSON at byte \(error.offset): \(error.message)")
        }
    }

    private static func object(_ value: JSONValue, context: String) throws(BodyError) -> [String: JSONValue] {
        guard case let .object(members) = value else {
            throw BodyError(detail: "\(context) must be a JSON object, not \(value.typeName)")
        }
        return members
    }

    private static func rejectUnknown(_ members: [String: JSONValue], allowed: Set<String>, context: String) throws(BodyError) {
        guard members.count > allowed.count || !members.keys.allSatisfy(allowed.contains) else { return }
        if let unknown = members.keys.filter({ !allowed.contains($0) }).min() {
            let known = allowed.isEmpty ? "no fields" : "only " + allowed.sorted().map { "\"\($0)\"" }.joined(separator: ", ")
            throw BodyError(detail: "\(context): unknown field \"\(unknown.prefix(64))\" (it takes \(known))")
        }
    }
}

/// What a scroll body holds: one report, the everyday case (applied without
/// building an array), or a batch, applied in order as one change.
enum ScrollBody<Element> {
    case report(Element)
    case batch([Element])

    var elements: [Element] {
        switch self {
        case let .report(element): [element]
        case let .batch(elements): elements
        }
    }
}
