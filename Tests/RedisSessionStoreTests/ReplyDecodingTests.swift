import Redis
@testable import RedisSessionStore
import Testing
import TopChromeCore

/// The library's replies as the store reads them, without a Redis: the
/// integers in them are read from their bytes, and must say what
/// `UInt64(String)` would have said.
struct ReplyDecodingTests {
    let id = SessionID(high: 1, low: 2)
    let tag = StateTag(bits: 0xabc_def_012_345)

    private func reply(status: RESPValue = .bulk(Array("done".utf8)), revealed: String = "1",
                       version: String = "18446744073709551615", seq: RESPValue = .bulk(Array("+42".utf8))) -> RESPValue {
        .array([status, .bulk(Array("379.5".utf8)), .bulk(Array(revealed.utf8)), .bulk(Array(version.utf8)), seq,
                .bulk(tag.hex), .bulk(Array("a".utf8)), .bulk(Array("1".utf8))])
    }

    @Test func theLargestVersionAndASeqWithItsSignAreRead() throws {
        let applied = try ChromeFunctions.applied(id, from: reply())
        let state = ChromeState(inset: 379.5, isRevealed: true, version: .max, lastAppliedSeq: 42)
        #expect(applied == AppliedInputs(outcome: .done(Session(id: id, state: state, tag: tag), staleReports: 0), reports: [.applied]))
    }

    @Test func aStatusMayComeAsASimpleStringAndNoSeqAsNull() throws {
        let outcome = try ChromeFunctions.outcome(id, from: reply(status: .simple("failed"), revealed: "0", version: "7", seq: .null))
        #expect(outcome == .conditionFailed(Session(id: id, state: ChromeState(inset: 379.5, isRevealed: false, version: 7, lastAppliedSeq: nil), tag: tag)))
    }

    @Test(arguments: ["18446744073709551616", "", "+", "-1", "12a", " 1", "1.0"])
    func aVersionThatIsNoUInt64IsRefused(version: String) {
        #expect(UInt64(version) == nil)
        #expect(throws: ChromeFunctionError.self) { try ChromeFunctions.applied(id, from: reply(version: version)) }
    }

    /// Up to 19 digits are read without checking for overflow, past that with:
    /// both sides of that line, and what is not a number, read as `UInt64(String)` reads them.
    @Test(arguments: ["0", "-0", "+0", "-", "+", "", "7", "-7", "+42", "0042", "12a", "1 ", "a1", "١",
                      "9999999999999999999", "99999999999999999999", "10000000000000000000", "18446744073709551615",
                      "18446744073709551616", "00000000000000000001", "+18446744073709551615", "-00000000000000000000",
                      "1844674407370955161a", "184467440737095516150", "999999999999999999a", "-9999999999999999999",
                      "-0000000000000000000"])
    func decimalsAreReadAsUInt64ReadsThem(text: String) {
        #expect(ChromeFunctions.decimal(.bulk(Array(text.utf8))) == UInt64(text))
    }

    @Test(arguments: ["2", "", "10", "true"])
    func aRevealedFlagOtherThanZeroOrOneIsRefused(revealed: String) {
        #expect(throws: ChromeFunctionError.self) { try ChromeFunctions.applied(id, from: reply(revealed: revealed)) }
    }

    @Test func anUnknownStatusIsRefused() {
        #expect(throws: ChromeFunctionError.self) { try ChromeFunctions.outcome(id, from: reply(status: .bulk(Array("dune".utf8)))) }
    }
}
