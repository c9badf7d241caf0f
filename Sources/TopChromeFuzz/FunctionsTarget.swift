import Foundation
import Redis
import RedisSessionStore
import TopChromeCore

/// `functions`: what the server reads from the `topchrome_<version>` function library
/// (Sources/RedisSessionStore/topchrome.lua): the messages of a session's
/// change channel (`ChromeFunctions.event`) and the replies of `FCALL`
/// (`ChromeFunctions.session`, `.outcome`, `.applied`).
///
/// The input is read whole as one channel message, and as RESP (hiredis),
/// each reply then being the reply of each function. A state is also drawn
/// from the input and written as the library writes it.
///
/// Invariants: nothing crashes; a message is `gone` or a state whose inset
/// is finite (a watcher writes it as JSON, which has no NaN or infinity),
/// and what is accepted reads back the same once written as the library
/// writes it; the replies are decoded exactly as `Reference` decodes the
/// shapes topchrome.lua returns, and what is decoded reads back the same
/// once written as the library writes it; a state drawn from the input,
/// written as the library writes messages and replies, is read exactly.
enum FunctionsTarget {
    static let target = FuzzTarget(
        name: "functions",
        summary: "change-channel messages and FCALL replies of the Redis function library",
        run: run)

    static let id = SessionID(high: 0x0123_4567_89ab_cdef, low: 0xfedc_ba98_7654_3210)

    static func run(_ bytes: [UInt8]) {
        let input = printable(bytes)
        checkMessage(bytes, input: input)
        let drawn = Session(id: id, state: state(drawnFrom: bytes), tag: tag(drawnFrom: bytes))
        check(ChromeFunctions.event(message(drawn), of: id) == .changed(drawn),
              "\(printable(message(drawn))) is not read as \(drawn): \(input)")
        for status in ["done", "failed"] {
            checkReply(reply(status, drawn, outcomes: status == "done" ? Array("ahs".utf8) : nil), input: input)
        }
        guard let replies = RESPValue.parse(bytes) else { return }
        for value in replies { checkReply(value, input: input) }
    }

    // MARK: Channel messages

    static func checkMessage(_ bytes: [UInt8], input: String) {
        switch ChromeFunctions.event(bytes, of: id) {
        case nil: break
        case let .removed(removed)?:
            check(removed == id && bytes == Array("gone".utf8), "read as a removal: \(input)")
        case let .changed(session)?:
            check(session.id == id, "a message of one session changed another: \(input)")
            check(session.state.inset.isFinite, "a message gave the inset \(session.state.inset): \(input)")
            let written = message(session)
            check(ChromeFunctions.event(written, of: id) == .changed(session),
                  "\(session.state) written as \(printable(written)) reads back otherwise: \(input)")
        }
    }

    /// As topchrome.lua's `message`: "<version>.<tag> <inset> <r>[ <seq>]",
    /// and with a behaviour other than the plain `revealAtTop`, " <seq or ->
    /// <behaviour words>".
    static func message(_ session: Session) -> [UInt8] {
        let state = session.state
        var text = session.entityTag.description + " " + exact(state.inset) + " " + (state.isRevealed ? "1" : "0")
        let behavior = words(state)
        if let seq = state.lastAppliedSeq { text += " " + integer(seq) } else if behavior != nil { text += " -" }
        if let behavior { text += " " + behavior }
        return Array(text.utf8)
    }

    /// As topchrome.lua's `words`: "<behaviour> <snap> <chosen height or ->
    /// <tracked height offset> <last offset or ->", nil for `revealAtTop`'s
    /// defaults (a tracked offset of -0 is not the default: Lua's `same` tells it from 0).
    static func words(_ state: ChromeState) -> String? {
        guard state.behavior != .revealAtTop || state.snap || state.chosenCollapsibleHeight != nil
                || state.trackedHeightOffset != 0 || state.trackedHeightOffset.sign == .minus || state.lastOffset != nil
        else { return nil }
        return [state.behavior.rawValue, state.snap ? "1" : "0", state.chosenCollapsibleHeight.map { exact(Double($0)) } ?? "-",
                exact(Double(state.trackedHeightOffset)), state.lastOffset.map(exact) ?? "-"].joined(separator: " ")
    }

    /// As topchrome.lua's `exact`: the shortest of 15 to 17 significant digits that reads back.
    static func exact(_ number: Double) -> String {
        for digits in 15...17 {
            let text = String(format: "%.\(digits)g", number)
            if Double(text) == number { return text }
        }
        return String(format: "%.17g", number)
    }

    /// As topchrome.lua's `integer` (`%.0f` of a whole double below 2^53).
    static func integer(_ number: UInt64) -> String { String(number) }

    /// A state the library could hold, from the input's first bytes.
    static func state(drawnFrom bytes: [UInt8]) -> ChromeState {
        var words = (0..<4).map { index -> UInt64 in
            bytes.dropFirst(index * 8).prefix(8).reduce(0) { $0 << 8 | UInt64($1) }
        }
        var inset = Double(bitPattern: words[0])
        if !inset.isFinite { inset = Double(words[0] & 0xFFFF) / 8 }
        words[1] &= (1 << 53) - 1
        // The behaviour from the bytes after the tag's: a choice byte, then
        // chosen height, tracked height offset (floats) and last offset.
        let choice = bytes.dropFirst(40).first ?? 0
        let chosen = finite(Float(bitPattern: UInt32(truncatingIfNeeded: bits(bytes, from: 41, count: 4))))
        let tracked = finite(Float(bitPattern: UInt32(truncatingIfNeeded: bits(bytes, from: 45, count: 4))))
        let last = bits(bytes, from: 49, count: 8)
        return ChromeState(inset: inset, isRevealed: words[2] & 1 == 1, version: max(1, words[1]),
                           lastAppliedSeq: words[2] & 2 == 0 ? nil : words[3] & ((1 << 53) - 1),
                           behavior: RevealBehavior.allCases[Int(choice) % RevealBehavior.allCases.count],
                           snap: choice & 0x10 != 0, chosenCollapsibleHeight: choice & 0x20 == 0 ? nil : chosen,
                           trackedHeightOffset: tracked,
                           lastOffset: choice & 0x40 == 0 ? nil : finite(Double(bitPattern: last), else: Double(last & 0xFFFF) / 8))
    }

    private static func bits(_ bytes: [UInt8], from start: Int, count: Int) -> UInt64 {
        bytes.dropFirst(start).prefix(count).reduce(0) { $0 << 8 | UInt64($1) }
    }

    private static func finite(_ value: Float) -> Float {
        value.isFinite ? value : Float(value.bitPattern & 0xFFFF) / 8
    }

    private static func finite(_ value: Double, else replacement: Double) -> Double {
        value.isFinite ? value : replacement
    }

    /// A tag the library could draw, from the input's bytes after the state's.
    static func tag(drawnFrom bytes: [UInt8]) -> StateTag {
        StateTag(bits: bytes.dropFirst(32).prefix(8).reduce(0) { $0 << 8 | UInt64($1) })
    }

    // MARK: FCALL replies

    enum Decoded<Value: Equatable>: Equatable {
        case value(Value)
        case refused
        /// A state without a tag: the library's `read` of one an older library wrote.
        case untagged
    }

    static func decoded<Value>(_ body: () throws -> Value) -> Decoded<Value> {
        do {
            return .value(try body())
        } catch ChromeFunctionError.unexpectedReply {
            return .refused
        } catch ChromeFunctionError.refused(ChromeFunctions.untagged) {
            return .untagged
        } catch {
            fail("a decoder threw \(error), not unexpectedReply")
        }
    }

    static func checkReply(_ reply: RESPValue, input: String) {
        let session = decoded { try ChromeFunctions.session(id, from: reply, status: "done") }
        let outcome = decoded { try ChromeFunctions.outcome(id, from: reply) }
        let applied = decoded { try ChromeFunctions.applied(id, from: reply) }
        check(session == Reference.session(reply), "session: \(session), expected \(Reference.session(reply)) for \(reply): \(input)")
        check(outcome == Reference.outcome(reply), "outcome: \(outcome), expected \(Reference.outcome(reply)) for \(reply): \(input)")
        check(applied == Reference.applied(reply), "applied: \(applied), expected \(Reference.applied(reply)) for \(reply): \(input)")

        if case let .value(session?) = session {
            check(session.state.inset.isFinite, "a reply gave the inset \(session.state.inset): \(input)")
            let written = Self.reply("done", session, outcomes: nil)
            check(decoded { try ChromeFunctions.session(id, from: written, status: "done") } == .value(session),
                  "\(session.state) written as \(written) reads back otherwise: \(input)")
        }
        if case let .value(applied) = applied, case let .done(session, _) = applied.outcome {
            let letters = applied.reports.map { outcome -> UInt8 in
                switch outcome {
                case .applied: UInt8(ascii: "a")
                case .horizontal: UInt8(ascii: "h")
                case .stale: UInt8(ascii: "s")
                }
            }
            let written = Self.reply("done", session, outcomes: letters)
            check(decoded { try ChromeFunctions.applied(id, from: written) } == .value(applied),
                  "\(applied) written as \(written) reads back otherwise: \(input)")
        }
    }

    /// As topchrome.lua's `reply`: Lua strings arrive as bulk strings,
    /// `false` as a null, and the array ends at the first nil.
    /// With a behaviour other than the plain `revealAtTop`, its words are
    /// the ninth element (the seventh and eighth null when no outcomes).
    static func reply(_ status: String, _ session: Session, outcomes: [UInt8]?) -> RESPValue {
        let state = session.state
        var values: [RESPValue] = [
            .bulk(Array(status.utf8)), .bulk(Array(exact(state.inset).utf8)), .bulk(Array((state.isRevealed ? "1" : "0").utf8)),
            .bulk(Array(integer(state.version).utf8)), state.lastAppliedSeq.map { .bulk(Array(integer($0).utf8)) } ?? .null,
            .bulk(session.tag.hex),
        ]
        let behavior = words(state)
        if let outcomes {
            values += [.bulk(outcomes), .bulk(Array("1".utf8))]
        } else if behavior != nil {
            values += [.null, .null]
        }
        if let behavior { values.append(.bulk(Array(behavior.utf8))) }
        return .array(values)
    }

    /// The shapes topchrome.lua returns, read from its comments: null for no
    /// session; else `[status, inset, revealed, version, seq or null, tag or
    /// null]`, texts (bulk or status strings; the tag bulk only), the inset a
    /// finite number, revealed `1` or `0`, version and seq unsigned decimals,
    /// the tag twelve lower-case hex digits; the library's `apply`'s `done`
    /// adds a seventh element, one letter a, h or s per scroll report, and an
    /// eighth, whether the session changed (which no decoder reads); a ninth,
    /// when not null, is the behaviour in five words: a behaviour's name,
    /// snap `1` or `0`, the chosen height (`-` for none) and the tracked
    /// height offset, both floats written exactly, and the last offset (`-`
    /// for none), a finite number.
    enum Reference {
        static func session(_ reply: RESPValue) -> Decoded<Session?> {
            guard reply != .null else { return .value(nil) }
            guard let (status, session) = statusAndSession(reply), status == "done" else { return .refused }
            return session.map { .value($0) } ?? .untagged
        }

        static func outcome(_ reply: RESPValue) -> Decoded<StoreOutcome?> {
            guard reply != .null else { return .value(nil) }
            guard let (status, session) = statusAndSession(reply), status == "done" || status == "failed" else { return .refused }
            guard let session else { return .untagged }
            return .value(status == "done" ? .done(session) : .conditionFailed(session))
        }

        static func applied(_ reply: RESPValue) -> Decoded<AppliedInputs> {
            guard reply != .null else { return .value(AppliedInputs(outcome: .notFound, reports: [])) }
            guard let (status, session) = statusAndSession(reply), status == "done" || status == "failed" else { return .refused }
            guard let session else { return .untagged }
            switch status {
            case "failed": return .value(AppliedInputs(outcome: .conditionFailed(session), reports: []))
            case "done":
                guard case let .array(values) = reply, values.count == 8 || values.count == 9, case let .bulk(letters) = values[6] else {
                    return .refused
                }
                var reports: [ReportOutcome] = []
                for letter in letters {
                    switch Character(Unicode.Scalar(letter)) {
                    case "a": reports.append(.applied)
                    case "h": reports.append(.horizontal)
                    case "s": reports.append(.stale)
                    default: return .refused
                    }
                }
                return .value(AppliedInputs(outcome: .done(session, staleReports: reports.count { $0 == .stale }), reports: reports))
            default: return .refused
            }
        }

        /// The status and the session, nil when its tag is null; nil when the reply is not one.
        private static func statusAndSession(_ reply: RESPValue) -> (String, Session?)? {
            guard case let .array(values) = reply, values.count >= 6, let (status, plain) = statusAndState(values) else { return nil }
            var state = plain
            if values.count > 8, values[8] != .null {
                guard let words = text(values[8]), let withBehavior = behavior(words, state) else { return nil }
                state = withBehavior
            }
            switch values[5] {
            case .null: return (status, nil)
            case let .bulk(hex):
                guard hex.count == 12, hex.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }),
                      let bits = UInt64(String(decoding: hex, as: UTF8.self), radix: 16) else { return nil }
                return (status, Session(id: id, state: state, tag: StateTag(bits: bits)))
            default: return nil
            }
        }

        private static func statusAndState(_ values: [RESPValue]) -> (String, ChromeState)? {
            let texts = values.prefix(5).map(text)
            guard let status = texts[0], let insetText = texts[1], let inset = Double(insetText), inset.isFinite,
                  let versionText = texts[3], let version = UInt64(versionText) else { return nil }
            let revealed: Bool
            switch texts[2] {
            case "1": revealed = true
            case "0": revealed = false
            default: return nil
            }
            var seq: UInt64?
            if values[4] != .null {
                guard let seqText = texts[4], let number = UInt64(seqText) else { return nil }
                seq = number
            }
            return (status, ChromeState(inset: inset, isRevealed: revealed, version: version, lastAppliedSeq: seq))
        }

        private static func behavior(_ words: String, _ state: ChromeState) -> ChromeState? {
            let fields = words.components(separatedBy: " ")
            guard fields.count == 5, let behavior = RevealBehavior.allCases.first(where: { $0.rawValue == fields[0] }),
                  fields[1] == "1" || fields[1] == "0", let tracked = float(fields[3]) else { return nil }
            let chosen = fields[2] == "-" ? Float?.none : float(fields[2])
            let last = fields[4] == "-" ? Double?.none : Double(fields[4])
            guard fields[2] == "-" || chosen != nil, fields[4] == "-" || last?.isFinite == true else { return nil }
            return ChromeState(inset: state.inset, isRevealed: state.isRevealed, version: state.version,
                               lastAppliedSeq: state.lastAppliedSeq, behavior: behavior, snap: fields[1] == "1",
                               chosenCollapsibleHeight: chosen, trackedHeightOffset: tracked, lastOffset: last)
        }

        /// A double that is a float exactly.
        private static func float(_ text: String) -> Float? {
            guard let value = Double(text), value.isFinite, Float(value).isFinite, Double(Float(value)) == value else { return nil }
            return Float(value)
        }

        private static func text(_ value: RESPValue) -> String? {
            switch value {
            case let .simple(text): text
            case let .bulk(bytes): String(decoding: bytes, as: UTF8.self)
            default: nil
            }
        }
    }
}
