import Redis
import TopChromeCore

/// What the library's replies mean: its shapes are documented in topchrome.lua.
extension ChromeFunctions {
    // The decoders are package-wide so the fuzz target can give them any reply.

    /// What the library's `apply` answered.
    package static func applied(_ id: SessionID, from reply: RESPValue) throws -> AppliedInputs {
        guard let outcome = try outcome(id, from: reply) else { return AppliedInputs(outcome: .notFound, reports: []) }
        guard case let .done(session, _) = outcome else { return AppliedInputs(outcome: outcome, reports: []) }
        guard case let .array(values) = reply, values.count == 8 || values.count == 9, case let .bulk(letters) = values[6] else {
            throw ChromeFunctionError.unexpectedReply(reply)
        }
        let reports = try letters.map { letter -> ReportOutcome in
            switch letter {
            case UInt8(ascii: "a"): .applied
            case UInt8(ascii: "h"): .horizontal
            case UInt8(ascii: "s"): .stale
            default: throw ChromeFunctionError.unexpectedReply(reply)
            }
        }
        return AppliedInputs(outcome: .done(session, staleReports: reports.count { $0 == .stale }), reports: reports)
    }

    /// nil for a null reply (no such session); else the session, if the status is `status`.
    package static func session(_ id: SessionID, from reply: RESPValue, status: String) throws -> Session? {
        if reply == .null { return nil }
        guard case let .array(values) = reply, values.count >= 6, values[0].string == status else {
            throw ChromeFunctionError.unexpectedReply(reply)
        }
        return try session(id, values, reply)
    }

    package static func outcome(_ id: SessionID, from reply: RESPValue) throws -> StoreOutcome? {
        if reply == .null { return nil }
        guard case let .array(values) = reply, values.count >= 6 else { throw ChromeFunctionError.unexpectedReply(reply) }
        let done: Bool
        switch values[0] {
        case .bulk(doneWord), .simple("done"): done = true
        case .bulk(failedWord), .simple("failed"): done = false
        default: throw ChromeFunctionError.unexpectedReply(reply)
        }
        let session = try session(id, values, reply)
        return done ? .done(session) : .conditionFailed(session)
    }

    /// The session in a reply's second to sixth elements. A state without a
    /// tag (last written by an older library, read without writing) cannot
    /// be named to a client: the read fails as if refused, and any call that
    /// may write names it.
    private static func session(_ id: SessionID, _ values: [RESPValue], _ reply: RESPValue) throws -> Session {
        guard var state = state(values[1...4]) else { throw ChromeFunctionError.unexpectedReply(reply) }
        // The ninth element, when there is one, holds the session's behaviour (see ChromeFunctions+Behavior).
        if values.count > 8, values[8] != .null {
            guard let words = values[8].string, let withBehavior = withBehavior(words, state) else {
                throw ChromeFunctionError.unexpectedReply(reply)
            }
            state = withBehavior
        }
        switch values[5] {
        case .null: throw ChromeFunctionError.refused(untagged)
        case let .bulk(hex): if let tag = StateTag(hex: hex) { return Session(id: id, state: state, tag: tag) }
        default: break
        }
        throw ChromeFunctionError.unexpectedReply(reply)
    }

    package static let untagged = "the session was last changed by an older build and cannot be named while Redis takes no writes"

    private static let doneWord = Array("done".utf8), failedWord = Array("failed".utf8)

    /// inset, revealed, version, seq (null when none), all as text: Swift's
    /// `Double(String)` rounds correctly, so the double Lua held comes back.
    /// The integers are read from the bytes, as `UInt64(String)` reads them,
    /// without a string each: this runs for every reply.
    private static func state(_ values: ArraySlice<RESPValue>) -> ChromeState? {
        let base = values.startIndex
        guard let inset = values[base].string.flatMap(Double.init), inset.isFinite,
              let revealed = flag(values[base + 1]),
              let version = decimal(values[base + 2]) else { return nil }
        var seq: UInt64?
        if values[base + 3] != .null {
            guard let number = decimal(values[base + 3]) else { return nil }
            seq = number
        }
        return ChromeState(inset: inset, isRevealed: revealed, version: version, lastAppliedSeq: seq)
    }

    /// Decimal digits that fit a `UInt64`, read as `UInt64(String)` reads
    /// them: an optional `+` first, or a `-` before a zero.
    static func decimal(_ value: RESPValue) -> UInt64? {
        guard case let .bulk(bytes) = value else { return value.string.flatMap { UInt64($0) } }
        var digits = bytes[...]
        let negative = digits.first == UInt8(ascii: "-")
        if negative || digits.first == UInt8(ascii: "+") { digits = digits.dropFirst() }
        guard !digits.isEmpty else { return nil }
        var number: UInt64 = 0
        // Up to 19 digits cannot overflow: a version or a seq is read without checking each step.
        if digits.count <= 19 {
            for byte in digits {
                let digit = byte &- UInt8(ascii: "0")
                guard digit < 10 else { return nil }
                number = number &* 10 &+ UInt64(digit)
            }
            return negative && number != 0 ? nil : number
        }
        for byte in digits {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let (times10, overflowed) = number.multipliedReportingOverflow(by: 10)
            let (sum, carried) = times10.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
            guard !overflowed, !carried else { return nil }
            number = sum
        }
        return negative && number != 0 ? nil : number
    }

    private static func flag(_ value: RESPValue) -> Bool? {
        switch value {
        case .bulk([UInt8(ascii: "1")]): true
        case .bulk([UInt8(ascii: "0")]): false
        case .bulk: nil
        default: value.string.flatMap(revealed)
        }
    }

    static func revealed(_ text: String) -> Bool? {
        switch text {
        case "1": true
        case "0": false
        default: nil
        }
    }
}
