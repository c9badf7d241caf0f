import StrictJSON
import TopChromeCore

/// The request bodies, from the README and openapi.yaml.
enum BodyModel {
    private static func parse(_ body: [UInt8]) -> JSONValue? {
        try? JSONReader.parse(body)
    }

    /// POST /v1/sessions: nothing, `{}`, or any of `inset`, `behavior`,
    /// `collapsibleHeight` and `snap`; nil when refused. White space alone
    /// is not "nothing" but malformed JSON.
    static func newSession(_ body: [UInt8]) -> ChromeState? {
        if body.isEmpty { return ChromeState() }
        guard case let .object(members)? = parse(body),
              Set(members.keys).isSubset(of: ["inset", "behavior", "collapsibleHeight", "snap"]) else { return nil }
        var given = 0.0
        if let value = members["inset"] {
            guard let number = inset(value) else { return nil }
            given = number
        }
        return settings(members, behaviorRequired: false).map { ChromeState(inset: given, settings: $0) }
    }

    /// PUT …/behavior: `behavior` required, `collapsibleHeight` (0 … 10000)
    /// and `snap` optional, nothing else.
    static func behavior(_ body: [UInt8]) -> RevealSettings? {
        guard case let .object(members)? = parse(body),
              Set(members.keys).isSubset(of: ["behavior", "collapsibleHeight", "snap"]) else { return nil }
        return settings(members, behaviorRequired: true)
    }

    private static func settings(_ members: [String: JSONValue], behaviorRequired: Bool) -> RevealSettings? {
        var settings = RevealSettings()
        switch members["behavior"] {
        case nil: if behaviorRequired { return nil }
        case .string("revealAtTop"): settings.behavior = .revealAtTop
        case .string("pinned"): settings.behavior = .pinned
        case .string("enterAlways"): settings.behavior = .enterAlways
        case .string("exitUntilCollapsed"): settings.behavior = .exitUntilCollapsed
        default: return nil
        }
        if let height = members["collapsibleHeight"] {
            guard case let .number(number, _) = height, number >= 0, number <= 10_000 else { return nil }
            settings.collapsibleHeight = Float(number)
        }
        switch members["snap"] {
        case nil: break
        case let .bool(snap)?: settings.snap = snap
        default: return nil
        }
        return settings
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
              Set(members.keys).isSubset(of: ["contentOffsetY", "contentInsetTop", "axis", "seq", "phase", "contentHeight",
                                              "viewportHeight"]),
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
        switch members["phase"] {
        case nil: break
        case .string("began"): report.phase = .began
        case .string("changed"): report.phase = .changed
        case .string("ended"): report.phase = .ended
        default: return nil
        }
        for (name, path) in [("contentHeight", \ScrollReport.contentHeight), ("viewportHeight", \ScrollReport.viewportHeight)] {
            guard let height = members[name] else { continue }
            guard case let .number(number, _) = height, number.isFinite, number >= 0 else { return nil }
            report[keyPath: path] = number
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
