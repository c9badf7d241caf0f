import Testing
import TopChromeCore

@Suite struct ChromeRulesTests {
    let rules = ChromeRules()

    func scrolled(_ y: Double, insetTop: Double = 0, from state: ChromeState = ChromeState()) -> ChromeState {
        rules.apply(.scroll(ScrollReport(contentOffsetY: y, contentInsetTop: insetTop)), to: state)
    }

    @Test func newSessionIsRevealedAtVersionOne() {
        let state = ChromeState(inset: 59)
        #expect(state.inset == 59)
        #expect(state.isRevealed)
        #expect(state.version == 1)
        #expect(state.lastAppliedSeq == nil)
    }

    @Test func thresholdIsInclusiveAtOnePoint() {
        let hidden = scrolled(300)
        #expect(!hidden.isRevealed)
        #expect(scrolled(1, from: hidden).isRevealed)
        #expect(!scrolled(1.0001, from: hidden).isRevealed)
        #expect(scrolled(0.5, from: hidden).isRevealed, "rubber-band jitter below a point keeps the island")
    }

    @Test func topInsetIsAddedBack() {
        let hidden = scrolled(300)
        #expect(scrolled(-59, insetTop: 59, from: hidden).isRevealed)
        #expect(!scrolled(-57, insetTop: 59, from: hidden).isRevealed)
        #expect(scrolled(-100, insetTop: 0, from: hidden).isRevealed, "overscroll above the top counts as the top")
    }

    @Test func offsetsBeyondDoubleRangeStillCompare() {
        #expect(!scrolled(1e308, insetTop: 1e308).isRevealed)
        #expect(scrolled(-1e308, insetTop: -1e308, from: scrolled(500)).isRevealed)
    }

    @Test func thresholdIsConfigurable() {
        let lenient = ChromeRules(revealThreshold: 40)
        let state = lenient.apply(.scroll(ScrollReport(contentOffsetY: 40)), to: ChromeState())
        #expect(state.isRevealed)
        #expect(!lenient.apply(.scroll(ScrollReport(contentOffsetY: 40.5)), to: state).isRevealed)
    }

    @Test func horizontalReportsNeverChangeTheChrome() {
        let hidden = scrolled(500)
        let after = rules.apply(.scroll(ScrollReport(contentOffsetY: 0, axis: .horizontal)), to: hidden)
        #expect(after == hidden)
        let revealed = ChromeState()
        #expect(rules.apply(.scroll(ScrollReport(contentOffsetY: 900, axis: .horizontal)), to: revealed) == revealed)
    }

    @Test func horizontalReportWithSeqRaisesTheMark() {
        let after = rules.apply(.scroll(ScrollReport(contentOffsetY: 0, axis: .horizontal, seq: 7)), to: ChromeState())
        #expect(after.lastAppliedSeq == 7)
        #expect(after.version == 1)
        let stale = rules.apply(.scroll(ScrollReport(contentOffsetY: 500, seq: 7)), to: after)
        #expect(stale.isRevealed, "a vertical report with the same seq is stale")
    }

    @Test func disappearRevealsTheIsland() {
        let hidden = scrolled(500)
        let left = rules.apply(.disappear, to: hidden)
        #expect(left.isRevealed)
        #expect(left.version == hidden.version + 1)
        #expect(rules.apply(.disappear, to: left) == left, "already revealed: nothing changes")
    }

    @Test func staleReportsAreIgnored() {
        let hidden = rules.apply(.scroll(ScrollReport(contentOffsetY: 500, seq: 10)), to: ChromeState())
        #expect(!hidden.isRevealed)
        #expect(hidden.lastAppliedSeq == 10)
        #expect(rules.apply(.scroll(ScrollReport(contentOffsetY: 0, seq: 10)), to: hidden) == hidden)
        #expect(rules.apply(.scroll(ScrollReport(contentOffsetY: 0, seq: 9)), to: hidden) == hidden)
        let newer = rules.apply(.scroll(ScrollReport(contentOffsetY: 0, seq: 11)), to: hidden)
        #expect(newer.isRevealed)
        #expect(newer.lastAppliedSeq == 11)
    }

    @Test func reportsWithoutSeqAlwaysApply() {
        let marked = rules.apply(.scroll(ScrollReport(contentOffsetY: 500, seq: 100)), to: ChromeState())
        let after = rules.apply(.scroll(ScrollReport(contentOffsetY: 0)), to: marked)
        #expect(after.isRevealed)
        #expect(after.lastAppliedSeq == 100)
    }

    @Test func seqZeroIsAValidFirstSeq() {
        let state = rules.apply(.scroll(ScrollReport(contentOffsetY: 500, seq: 0)), to: ChromeState())
        #expect(!state.isRevealed)
        #expect(state.lastAppliedSeq == 0)
    }

    @Test func versionBumpsOnlyOnChange() {
        var state = ChromeState()
        state = scrolled(0, from: state)
        #expect(state.version == 1, "at the top already")
        state = scrolled(200, from: state)
        #expect(state.version == 2)
        state = scrolled(400, from: state)
        #expect(state.version == 2, "still hidden")
        state = rules.apply(.setInset(59), to: state)
        #expect(state.version == 3)
        #expect(state.inset == 59)
        state = rules.apply(.setInset(59), to: state)
        #expect(state.version == 3, "same inset")
    }

    /// Past the last version a change would share its version with another
    /// state (or be rounded by clients): the session keeps its state instead.
    @Test func noChangePastTheLastVersion() {
        let last = ChromeState.allowedVersions.upperBound
        #expect(last == 9_007_199_254_740_991)
        var state = ChromeState(inset: 0, isRevealed: true, version: last - 1, lastAppliedSeq: nil)
        state = scrolled(200, from: state)
        #expect(state.version == last)
        #expect(!state.isRevealed)
        for input in [ChromeInput.scroll(ScrollReport(contentOffsetY: 0)), .setInset(59), .disappear] {
            #expect(rules.apply(input, to: state) == state, "\(input) changes nothing at the last version")
        }
    }

    @Test func batchAppliesInOrder() {
        let state = rules.apply(
            [.scroll(ScrollReport(contentOffsetY: 500)), .setInset(47), .scroll(ScrollReport(contentOffsetY: 0))],
            to: ChromeState())
        #expect(state.isRevealed)
        #expect(state.inset == 47)
        #expect(state.version == 4)
    }
}

@Suite struct SessionIDTests {
    @Test func roundTripsThroughText() {
        for _ in 0..<100 {
            let id = SessionID.random()
            let text = id.description
            #expect(text.count == 32)
            #expect(text.allSatisfy { $0.isHexDigit && !$0.isUppercase })
            #expect(SessionID(text) == id)
        }
        #expect(SessionID("0000000000000001000000000000000f") == SessionID(high: 1, low: 15))
    }

    /// Every byte that is not a lowercase hex digit spoils an id, in either half.
    @Test func everyOtherByteIsRefused() {
        let hex = Set("0123456789abcdef".utf8)
        for byte in UInt8.min...UInt8.max {
            for position in 0..<32 {
                var text = Array("0123456789abcdef0123456789abcdef".utf8)
                text[position] = byte
                let id = text.withUnsafeBufferPointer { SessionID(utf8: $0) }
                #expect((id != nil) == hex.contains(byte), "byte \(byte) at \(position)")
            }
        }
    }

    /// Every digit in every place reads and writes as itself: the parser and
    /// the writer take eight digits at a time, so a digit's place is where
    /// they could go wrong.
    @Test func everyDigitInEveryPlace() {
        let ones: UInt64 = 0x1111_1111_1111_1111
        for position in 0..<32 {
            for (value, digit) in "0123456789abcdef".utf8.enumerated() {
                var text = Array(repeating: UInt8(ascii: "1"), count: 32)
                text[position] = digit
                let shift = UInt64(4 * (15 - position % 16))
                let half = ones & ~(0xF << shift) | UInt64(value) << shift
                let expected = position < 16 ? SessionID(high: half, low: ones) : SessionID(high: ones, low: half)
                #expect(text.withUnsafeBufferPointer { SessionID(utf8: $0) } == expected, "\(value) at \(position)")
                #expect(expected.description == String(decoding: text, as: UTF8.self))
            }
        }
    }

    /// A state's tag is twelve digits, each in its place, as `init(hex:)` reads them.
    @Test func aTagWritesEveryDigitInItsPlace() {
        for position in 0..<12 {
            for value in UInt64(0)...15 {
                let tag = StateTag(bits: 0x1111_1111_1111 & ~(0xF << UInt64(4 * (11 - position))) | value << UInt64(4 * (11 - position)))
                let hex = tag.hex
                #expect(hex.count == 12)
                #expect(StateTag(hex: hex) == tag)
                #expect(String(decoding: hex, as: UTF8.self) == String(repeating: "0", count: 12 - String(tag.bits, radix: 16).count) + String(tag.bits, radix: 16))
            }
        }
    }

    /// All zeros is no id: written down by anyone, it must name no session,
    /// so no parser accepts it (nor does `random()` draw it).
    @Test func theAllZeroIdIsRefused() {
        #expect(SessionID(String(repeating: "0", count: 32)) == nil)
        let zeros = Array(repeating: UInt8(ascii: "0"), count: 32)
        #expect(zeros.withUnsafeBufferPointer { SessionID(utf8: $0) } == nil)
        #expect(SessionID("00000000000000000000000000000001") == SessionID(high: 0, low: 1))
        #expect(SessionID("10000000000000000000000000000000") == SessionID(high: 1 << 60, low: 0))
    }

    @Test func randomIdsDiffer() {
        let ids = Set((0..<10_000).map { _ in SessionID.random() })
        #expect(ids.count == 10_000)
    }

    @Test(arguments: ["", "abc", "0123456789abcdef0123456789abcde", "0123456789abcdef0123456789abcdef0",
                      "0123456789ABCDEF0123456789abcdef", "0123456789abcdeg0123456789abcdef", "../../etc/passwd/////////////////"])
    func rejectsMalformedText(_ text: String) {
        #expect(SessionID(text) == nil)
    }
}
