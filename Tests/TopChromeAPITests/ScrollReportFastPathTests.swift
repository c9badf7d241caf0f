import Testing
import TopChromeCore
@testable import TopChromeAPI
import TopChromeTesting

/// The fast path must answer exactly as the strict reader wherever it answers.
@Suite struct ScrollReportFastPathTests {
    func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test(arguments: [
        #"{"contentOffsetY": 300}"#, #"{"contentOffsetY":-59,"contentInsetTop":59}"#,
        #"{"seq": 42, "axis": "horizontal", "contentOffsetY": 0}"#,
        #"[{"contentOffsetY": 1.0001}, {"contentOffsetY": 1e2, "seq": 0}]"#,
        " \n{\"contentOffsetY\":\t-0.5e-3 }\r\n", #"{"contentOffsetY": 1E+2, "contentInsetTop": -0}"#,
        #"{"contentOffsetY": 179.5, "seq": 9007199254740991}"#,
        #"{"contentOffsetY": 0.1, "contentInsetTop": 0.2}"#, #"{"contentOffsetY": 123456789012345678901234567890}"#,
    ])
    func answersCommonBodies(_ body: String) throws {
        let fast = try #require(ScrollReportFastPath.reports(bytes(body)))
        #expect(fast == (try RequestBodies.strictScrollReports(bytes(body))))
    }

    @Test(arguments: [
        "", "{}", "[]", "null", #"{"contentOffsetY": 1, "contentOffsetY": 2}"#, #"{"contentOffsetY": "1"}"#,
        #"{"contentOffsetY": 1e400}"#, #"{"contentOffsetY": 1, "seq": 1.0}"#, #"{"contentOffsetY": 1, "seq": -0}"#,
        #"{"contentOffsetY": 1, "seq": 9007199254740992}"#, #"{"contentOffsetY": 1, "axis": "diagonal"}"#,
        #"{"content\u004fffsetY": 1}"#, #"{"contentOffsetY": 01}"#, #"{"contentOffsetY": 1,}"#, #"{"x": 1}"#,
        #"{"contentOffsetY": 1} x"#, #"[{"contentOffsetY": 1},]"#, #"{"contentOffsetY": null}"#,
    ])
    func leavesTheRestToTheStrictReader(_ body: String) {
        #expect(ScrollReportFastPath.reports(bytes(body)) == nil)
    }

    /// The members reveal behaviours read come the fast way too, read as the strict reader reads them.
    @Test(arguments: [
        #"{"contentOffsetY": 300, "phase": "ended", "contentHeight": 2400, "viewportHeight": 800, "seq": 5}"#,
        #"{"phase": "began", "contentOffsetY": 0}"#, #"{"contentOffsetY": 1, "phase": "changed", "contentHeight": -0}"#,
    ])
    func answersBehaviourMembers(_ body: String) throws {
        let fast = try #require(ScrollReportFastPath.reports(bytes(body)))
        #expect(fast == (try RequestBodies.strictScrollReports(bytes(body))))
    }

    @Test(arguments: [
        #"{"contentOffsetY": 1, "phase": "lifted"}"#, #"{"contentOffsetY": 1, "contentHeight": -1}"#,
        #"{"contentOffsetY": 1, "viewportHeight": "tall"}"#, #"{"contentOffsetY": 1, "phase": "ended", "phase": "ended"}"#,
    ])
    func leavesBadBehaviourMembersToTheStrictReader(_ body: String) {
        #expect(ScrollReportFastPath.reports(bytes(body)) == nil)
    }

    @Test func batchLimitGoesToTheStrictReader() {
        let one = #"{"contentOffsetY":1}"#
        #expect(ScrollReportFastPath.reports(bytes("[" + Array(repeating: one, count: 1024).joined(separator: ",") + "]"))?.count == 1024)
        #expect(ScrollReportFastPath.reports(bytes("[" + Array(repeating: one, count: 1025).joined(separator: ",") + "]")) == nil)
    }

    /// The fast path converts short decimals itself (one exact rounding)
    /// and leaves the rest to strtod: either way every bit must be the strict
    /// reader's, the sign of zero included.
    @Test func convertsNumbersToTheSameBits() throws {
        var generator = SplitMix(seed: 0xD1_6175)
        var fixed = ["0", "-0", "0.0", "-0.0", "1e22", "1e23", "-1e-22", "1e-23", "123456789012345", "1234567890123456",
                     "9007199254740993", "0.1", "0.30000000000000004", "4.35", "2.5e-22", "179.5", "-58.5", "1E+0",
                     "0.000000000000001", "999999999999999e22", "999999999999999e-22", "5e-324", "1.7976931348623157e308"]
        for _ in 0..<20_000 {
            let digits = (0..<Int.random(in: 1...18, using: &generator)).map { _ in String(Int.random(in: 0...9, using: &generator)) }
            var text = digits.count > 1 && digits[0] == "0" ? "1" + digits.dropFirst().joined() : digits.joined()
            if Bool.random(using: &generator) {
                text += "." + (0..<Int.random(in: 1...12, using: &generator)).map { _ in String(Int.random(in: 0...9, using: &generator)) }.joined()
            }
            if Bool.random(using: &generator) { text += "e" + String(Int.random(in: -30...30, using: &generator)) }
            fixed.append(Bool.random(using: &generator) ? "-" + text : text)
        }
        for number in fixed {
            let body = bytes(#"{"contentOffsetY":"# + number + "}")
            let fast = try #require(ScrollReportFastPath.reports(body), "\(number)")
            let strict = try RequestBodies.strictScrollReports(body)
            #expect(fast[0].contentOffsetY.bitPattern == strict[0].contentOffsetY.bitPattern, "\(number)")
        }
    }

    /// Bodies assembled at random from valid and broken pieces: wherever the
    /// fast path answers, the strict reader gives the same reports.
    @Test func agreesWithTheStrictReaderOnGeneratedBodies() {
        var generator = SplitMix(seed: 0x70C0_FFEE)
        let keys = [#""contentOffsetY""#, #""contentOffsetY""#, #""contentInsetTop""#, #""axis""#, #""seq""#,
                    #""other""#, #""seq\u0000""#]
        let values = ["0", "-0", "1", "1.5", "-59", "1e2", "1E-7", "01", "1.", "9007199254740991", "9007199254740992",
                      "1e400", #""vertical""#, #""horizontal""#, #""up""#, "null", "true", "[]", "{}", "-", "3.0"]
        let spaces = ["", " ", "\n", "\t", "\r\n"]
        var answered = 0
        for _ in 0..<20_000 {
            func member() -> String {
                let key = keys.randomElement(using: &generator)!
                // Mostly a value of the right kind for the key, else anything.
                let fitting = key.contains("axis") ? [#""vertical""#, #""horizontal""#]
                    : key.contains("seq") ? ["0", "7", "9007199254740991"] : ["0", "-0", "1.5", "-59", "1e2", "1E-7"]
                let value = Int.random(in: 0..<4, using: &generator) > 0
                    ? fitting.randomElement(using: &generator)! : values.randomElement(using: &generator)!
                return spaces.randomElement(using: &generator)! + key + spaces.randomElement(using: &generator)! + ":" + value
            }
            func object() -> String {
                "{" + (0..<Int.random(in: 0...5, using: &generator)).map { _ in member() }.joined(separator: ",") + "}"
            }
            let body = Bool.random(using: &generator)
                ? object()
                : "[" + (0..<Int.random(in: 0...3, using: &generator)).map { _ in object() }.joined(separator: ",") + "]"
            guard let fast = ScrollReportFastPath.reports(bytes(body)) else { continue }
            answered += 1
            let strict = try? RequestBodies.strictScrollReports(bytes(body))
            #expect(fast == strict, "\(body)")
        }
        #expect(answered > 500, "the generator reaches the fast path often enough to mean something")
    }
}
