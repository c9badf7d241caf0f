import TopChromeCore

/// Scroll-report bodies of the everyday shape, read straight from the bytes
/// without building a JSON tree: clients post them many times a second.
///
/// It answers only when the body is plainly valid (known members once each,
/// no escapes, numbers that convert exactly as the strict reader converts
/// them) and returns nil for anything else, which then goes to the strict
/// reader in `RequestBodies`. So errors and edge cases have one source of
/// truth; where this path answers, it answers as the strict reader would
/// (checked by a differential test and fuzz target).
enum ScrollReportFastPath {
    static func reports(_ body: [UInt8]) -> [ScrollReport]? {
        read(body, as: { $0 })?.elements
    }

    /// The report or batch, each report made into an `Element` as it is read
    /// (so a batch builds one array, not one of reports and another of inputs).
    static func read<Element>(_ body: [UInt8], as make: (ScrollReport) -> Element) -> ScrollBody<Element>? {
        ByteReader.reading(body) { cursor in
            cursor.skipWhitespace()
            let read: ScrollBody<Element>
            switch cursor.peek {
            case UInt8(ascii: "{"):
                guard let report = cursor.report() else { return nil }
                read = .report(make(report))
            case UInt8(ascii: "["):
                cursor.index += 1
                var reports: [Element] = []
                while true {
                    cursor.skipWhitespace()
                    guard reports.count < RequestBodies.maxBatchCount, let report = cursor.report() else { return nil }
                    reports.append(make(report))
                    cursor.skipWhitespace()
                    if cursor.take(UInt8(ascii: ",")) { continue }
                    guard cursor.take(UInt8(ascii: "]")) else { return nil }
                    break
                }
                read = .batch(reports)
            default:
                return nil
            }
            cursor.skipWhitespace()
            return cursor.isAtEnd ? read : nil
        }
    }
}

/// The grammar of a scroll report, over the bytes ``ByteReader`` reads.
extension ByteReader {
    /// `{"contentOffsetY": n, "contentInsetTop": n, "axis": "…", "seq": n}` in any order, and
    /// `phase`, `contentHeight`, `viewportHeight`, which reveal behaviours use.
    fileprivate mutating func report() -> ScrollReport? {
        guard take(UInt8(ascii: "{")) else { return nil }
        var offset: Double?, insetTop = 0.0, axis = ScrollReport.Axis.vertical, seq: UInt64?
        var phase: ScrollReport.Phase?, contentHeight: Double?, viewportHeight: Double?
        var seen: UInt8 = 0
        skipWhitespace()
        guard peek != UInt8(ascii: "}") else { return nil }
        while true {
            skipWhitespace()
            guard let field = key(), seen & field.bit == 0 else { return nil }
            seen |= field.bit
            skipWhitespace()
            guard take(UInt8(ascii: ":")) else { return nil }
            skipWhitespace()
            switch field {
            case .contentOffsetY: guard let value = number() else { return nil }; offset = value
            case .contentInsetTop: guard let value = number() else { return nil }; insetTop = value
            case .axis: guard let value = axisName() else { return nil }; axis = value
            case .seq: guard let value = sequenceNumber() else { return nil }; seq = value
            case .phase: guard let value = phaseName() else { return nil }; phase = value
            case .contentHeight: guard let value = number(), value >= 0 else { return nil }; contentHeight = value
            case .viewportHeight: guard let value = number(), value >= 0 else { return nil }; viewportHeight = value
            }
            skipWhitespace()
            if take(UInt8(ascii: ",")) { continue }
            guard take(UInt8(ascii: "}")), let offset else { return nil }
            return ScrollReport(contentOffsetY: offset, contentInsetTop: insetTop, axis: axis, seq: seq, phase: phase,
                                contentHeight: contentHeight, viewportHeight: viewportHeight)
        }
    }

    fileprivate enum Field {
        case contentOffsetY, contentInsetTop, axis, seq, phase, contentHeight, viewportHeight
        var bit: UInt8 {
            switch self {
            case .contentOffsetY: 1
            case .contentInsetTop: 2
            case .axis: 4
            case .seq: 8
            case .phase: 16
            case .contentHeight: 32
            case .viewportHeight: 64
            }
        }
    }

    fileprivate mutating func key() -> Field? {
        guard let text = plainString() else { return nil }
        if equals(text, "contentOffsetY") { return .contentOffsetY }
        if equals(text, "contentInsetTop") { return .contentInsetTop }
        if equals(text, "axis") { return .axis }
        if equals(text, "seq") { return .seq }
        if equals(text, "phase") { return .phase }
        if equals(text, "contentHeight") { return .contentHeight }
        if equals(text, "viewportHeight") { return .viewportHeight }
        return nil
    }

    fileprivate mutating func phaseName() -> ScrollReport.Phase? {
        guard let text = plainString() else { return nil }
        if equals(text, "began") { return .began }
        if equals(text, "changed") { return .changed }
        if equals(text, "ended") { return .ended }
        return nil
    }

    fileprivate mutating func axisName() -> ScrollReport.Axis? {
        guard let text = plainString() else { return nil }
        if equals(text, "vertical") { return .vertical }
        if equals(text, "horizontal") { return .horizontal }
        return nil
    }

    /// A JSON number, converted as the strict reader's `Double(String)`
    /// converts it (correctly rounded); nil if not finite.
    fileprivate mutating func number() -> Double? {
        let start = index
        let isNegative = take(UInt8(ascii: "-"))
        let integerStart = index
        if !take(UInt8(ascii: "0")) {
            guard digits() > 0 else { return nil }
        }
        let integerEnd = index
        var fractionEnd = index
        if take(UInt8(ascii: ".")) {
            guard digits() > 0 else { return nil }
            fractionEnd = index
        }
        var exponent: Int? = 0
        if take(UInt8(ascii: "e")) || take(UInt8(ascii: "E")) {
            let isNegativeExponent = !take(UInt8(ascii: "+")) && take(UInt8(ascii: "-"))
            let exponentStart = index
            guard digits() > 0 else { return nil }
            exponent = index - exponentStart <= 4 ? Int(decimal(exponentStart..<index)) : nil
            if isNegativeExponent { exponent = exponent.map { -$0 } }
        }
        if let exponent, let value = Self.exactly(
            integer: decimalDigits(integerStart..<integerEnd),
            fraction: fractionEnd > integerEnd ? decimalDigits((integerEnd + 1)..<fractionEnd) : (0, 0),
            exponent: exponent) {
            return isNegative ? -value : value
        }
        return converted(start..<index)
    }

    /// Powers of ten that a `Double` holds exactly.
    fileprivate static let exactPowersOfTen: [Double] = (0...22).map { power in
        (0..<power).reduce(1.0) { product, _ in product * 10 }
    }

    /// `integer.fraction × 10^exponent` when it needs one rounding at most
    /// (Clinger's fast path: significand ≤ 2^53 and a power of ten a
    /// `Double` holds exactly), so the result is the correctly rounded one,
    /// as `strtod` gives; nil when that does not apply.
    private static func exactly(integer: (value: UInt64, count: Int)?, fraction: (value: UInt64, count: Int)?,
                                exponent: Int) -> Double? {
        guard let integer, let fraction, integer.count + fraction.count <= 15 else { return nil }
        var significand = integer.value
        for _ in 0..<fraction.count { significand *= 10 }
        significand += fraction.value
        let power = exponent - fraction.count
        guard abs(power) <= 22 else { return nil }
        let value = Double(significand)
        return power < 0 ? value / exactPowersOfTen[-power] : value * exactPowersOfTen[power]
    }

    /// The digits in `range` as a number, and how many there were (at most 15, else nil).
    private func decimalDigits(_ range: Range<Int>) -> (value: UInt64, count: Int)? {
        range.count <= 15 ? (decimal(range), range.count) : nil
    }

    /// A plain integer literal within `ScrollReport.allowedSeqs`.
    fileprivate mutating func sequenceNumber() -> UInt64? {
        let start = index
        guard digits() > 0, index - start <= 16, self[start] != UInt8(ascii: "0") || index - start == 1 else {
            return nil
        }
        guard peek != UInt8(ascii: "."), peek != UInt8(ascii: "e"), peek != UInt8(ascii: "E") else { return nil }
        let value = decimal(start..<index)
        return ScrollReport.allowedSeqs.contains(value) ? value : nil
    }
}

/// For the differential fuzz target: whether the fast path, wherever it
/// answers `body`, answers exactly as the strict reader does.
public enum ScrollReportReaders {
    public static func agree(on body: [UInt8]) -> Bool {
        guard let fast = ScrollReportFastPath.reports(body) else { return true }
        return (try? RequestBodies.strictScrollReports(body)) == fast
    }
}
