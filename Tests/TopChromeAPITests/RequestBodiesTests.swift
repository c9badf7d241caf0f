import Testing
import TopChromeCore
@testable import TopChromeAPI

@Suite struct RequestBodiesTests {
    func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// What the API reads from a scroll request, as reports.
    func scrollReports(_ body: [UInt8]) throws(BodyError) -> [ScrollReport] {
        try RequestBodies.scrollInputs(body).elements.map { input in
            guard case let .scroll(report) = input else { preconditionFailure("a scroll body reads as scroll reports") }
            return report
        }
    }

    @Test func readsOneReport() throws {
        let reports = try scrollReports(bytes(
            #"{"contentOffsetY": -59, "contentInsetTop": 59, "axis": "horizontal", "seq": 42}"#))
        #expect(reports == [ScrollReport(contentOffsetY: -59, contentInsetTop: 59, axis: .horizontal, seq: 42)])
    }

    @Test func defaults() throws {
        let reports = try scrollReports(bytes(#"{"contentOffsetY": 3.5}"#))
        #expect(reports == [ScrollReport(contentOffsetY: 3.5, contentInsetTop: 0, axis: .vertical, seq: nil)])
    }

    @Test func hugeFiniteOffsetsAreAcceptedWhileTheirSumIsFinite() throws {
        let reports = try scrollReports(bytes(#"{"contentOffsetY":1e308,"contentInsetTop":-1e308}"#))
        #expect(reports[0].effectiveOffset == 0)
    }

    /// Each half is finite and the request is schema-valid; their sum may
    /// overflow to an infinity of its sign, which the rules compare as the
    /// exact sum: far down hides, far past the top reveals. Both readers agree.
    @Test(arguments: [(#"{"contentOffsetY":1e308,"contentInsetTop":1e308}"#, Double.infinity),
                      (#"{"contentInsetTop":-1.7e308,"contentOffsetY":-1.7e308}"#, -Double.infinity),
                      (#"[{"contentOffsetY":0},{"contentOffsetY":1e308,"contentInsetTop":1e308}]"#, Double.infinity)])
    func anOverflowingSumIsFarPastAnEnd(_ body: String, _ sum: Double) throws {
        let reports = try scrollReports(bytes(body))
        #expect(reports.last?.effectiveOffset == sum)
        #expect(ScrollReportFastPath.reports(bytes(body)) == reports, "the fast path answers as the strict reader")
    }

    @Test func duplicateMembersAreRefused() {
        #expect(throws: BodyError.self) { try scrollReports(bytes(#"{"contentOffsetY": 5, "contentOffsetY": 500}"#)) }
        #expect(throws: BodyError.self) { try RequestBodies.inset(bytes(#"{"inset": 5, "inset": 50}"#)) }
    }

    @Test func readsABatch() throws {
        let reports = try scrollReports(bytes(#"[{"contentOffsetY": 1}, {"contentOffsetY": 2, "seq": 5}]"#))
        #expect(reports.map(\.contentOffsetY) == [1, 2])
        #expect(reports.map(\.seq) == [nil, 5])
    }

    @Test func batchLimits() throws {
        let one = #"{"contentOffsetY":1}"#
        let full = "[" + Array(repeating: one, count: 1024).joined(separator: ",") + "]"
        #expect(try scrollReports(bytes(full)).count == 1024)
        let over = "[" + Array(repeating: one, count: 1025).joined(separator: ",") + "]"
        #expect(throws: BodyError.self) { try scrollReports(bytes(over)) }
        #expect(throws: BodyError.self) { try scrollReports(bytes("[]")) }
    }

    @Test func seqAcceptsWholeNumbersInRange() throws {
        func seq(_ literal: String) throws -> UInt64? {
            try scrollReports(bytes(#"{"contentOffsetY":0,"seq":\#(literal)}"#))[0].seq
        }
        #expect(try seq("0") == 0)
        #expect(try seq("9007199254740991") == 9_007_199_254_740_991)
        #expect(try seq("7.0") == 7)
        #expect(try seq("1e3") == 1000)
        #expect(try seq("70e-1") == 7)
        #expect(try seq("0.7E+1") == 7)
        #expect(try seq("-0") == 0)
        #expect(try seq("0.000e-99999999") == 0)
        #expect(try seq("9007199254740991.000000000000") == 9_007_199_254_740_991)
    }

    /// Integers by their exact decimal value, not by the Double they round to.
    @Test(arguments: ["1e-400", "9007199254740991.00000001", "0.5", "5e-1", "1e999999", "-0.5", "1e-9999999",
                      "-1e3", "18446744073709551616", "1e19"])
    func seqRefusesWhatIsNoIntegerInRange(_ literal: String) {
        #expect(throws: BodyError.self) { try scrollReports(bytes(#"{"contentOffsetY":0,"seq":\#(literal)}"#)) }
    }

    @Test(arguments: [
        #"{"contentOffsetY":0,"seq":-1}"#, #"{"contentOffsetY":0,"seq":9007199254740992}"#,
        #"{"contentOffsetY":0,"seq":1.5}"#, #"{"contentOffsetY":0,"seq":"1"}"#, #"{"contentOffsetY":0,"seq":null}"#,
        #"{"contentOffsetY":0,"seq":1e300}"#,
        #"{}"#, #"{"contentOffsetY":null}"#, #"{"contentOffsetY":"1"}"#, #"{"contentOffsetY":1e400}"#,
        #"{"contentOffsetY":-1e400}"#,
        #"{"contentOffsetY":0,"contentInsetTop":true}"#, #"{"contentOffsetY":0,"axis":"diagonal"}"#,
        #"{"contentOffsetY":0,"axis":null}"#, #"{"contentOffsetY":0,"extra":1}"#, #"[{"contentOffsetY":0},{"x":1}]"#,
        #"[{"contentOffsetY":0},5]"#, #"5"#, #""report""#, #"null"#, #"[[{"contentOffsetY":0}]]"#, "",
        #"{"contentOffsetY":0"#,
    ])
    func refusesBadReports(_ body: String) {
        #expect(throws: BodyError.self) { try scrollReports(bytes(body)) }
    }

    @Test func badBatchNamesTheReport() {
        #expect(throws: BodyError(detail: #"report [1]: unknown field "x" (it takes only "axis", "contentHeight", "contentInsetTop", "contentOffsetY", "phase", "seq", "viewportHeight")"#)) {
            try scrollReports(bytes(#"[{"contentOffsetY":0},{"contentOffsetY":0,"x":1}]"#))
        }
    }

    @Test func insetBodies() throws {
        #expect(try RequestBodies.inset(bytes(#"{"inset": 59}"#)) == 59)
        #expect(try RequestBodies.inset(bytes(#"{"inset": 0}"#)) == 0)
        #expect(try RequestBodies.inset(bytes(#"{"inset": 10000}"#)) == 10_000)
        for bad in ["", "{}", #"{"inset":-1}"#, #"{"inset":10000.5}"#, #"{"inset":null}"#, #"{"inset":"5"}"#,
                    #"{"inset":1e400}"#, #"{"inset":5,"x":1}"#, "[]"] {
            #expect(throws: BodyError.self, "\(bad)") { try RequestBodies.inset(bytes(bad)) }
        }
    }

    @Test func newSessionBodies() throws {
        #expect(try RequestBodies.newSession([]).inset == 0)
        #expect(throws: BodyError.self, "white space is not an empty body") { try RequestBodies.newSession(bytes("  \n")) }
        #expect(try RequestBodies.newSession(bytes("{}")).inset == 0)
        #expect(try RequestBodies.newSession(bytes(#"{"inset":47.5}"#)).inset == 47.5)
        #expect(throws: BodyError.self) { try RequestBodies.newSession(bytes(#"{"inset":20000}"#)) }
        #expect(throws: BodyError.self) { try RequestBodies.newSession(bytes(#"{"isRevealed":false}"#)) }
    }

    @Test func behaviorBodies() throws {
        #expect(try RequestBodies.newSession([]).settings == RevealSettings(), "revealAtTop unless named")
        #expect(try RequestBodies.newSession(bytes(#"{"inset":80,"behavior":"enterAlways","collapsibleHeight":56.5,"snap":true}"#)).settings
                == RevealSettings(behavior: .enterAlways, collapsibleHeight: 56.5, snap: true))
        #expect(try RequestBodies.behavior(bytes(#"{"behavior":"pinned"}"#)) == RevealSettings(behavior: .pinned))
        let refusals = [
            (#"{"snap":true}"#, "\"behavior\" is required"),
            (#"{"behavior":"sticky"}"#, "\"behavior\" must be one of"),
            (#"{"behavior":null}"#, "\"behavior\" must be one of"),
            (#"{"behavior":"pinned","collapsibleHeight":-1}"#, "\"collapsibleHeight\" must be"),
            (#"{"behavior":"pinned","collapsibleHeight":10001}"#, "\"collapsibleHeight\" must be"),
            (#"{"behavior":"pinned","snap":1}"#, "\"snap\" must be true or false"),
            (#"{"behavior":"pinned","inset":5}"#, "unknown field \"inset\""),
        ]
        for (body, detail) in refusals {
            #expect(throws: BodyError.self, "\(body)") { try RequestBodies.behavior(bytes(body)) }
            do { _ = try RequestBodies.behavior(bytes(body)) } catch { #expect(error.detail.contains(detail), "\(error.detail)") }
        }
        #expect(throws: BodyError.self) { try RequestBodies.newSession(bytes(#"{"behavior":"hidesOnSwipe"}"#)) }
    }

    @Test func scrollReportsWithPhaseAndHeights() throws {
        let report = try RequestBodies.strictScrollReports(
            bytes(#"{"contentOffsetY":1080,"phase":"ended","contentHeight":2000,"viewportHeight":1000}"#))
        #expect(report == [ScrollReport(contentOffsetY: 1080, phase: .ended, contentHeight: 2000, viewportHeight: 1000)])
        for (bad, detail) in [(#"{"contentOffsetY":0,"phase":"lifted"}"#, "\"phase\" must be"),
                              (#"{"contentOffsetY":0,"contentHeight":-1}"#, "\"contentHeight\" must not be negative"),
                              (#"{"contentOffsetY":0,"viewportHeight":"tall"}"#, "\"viewportHeight\" must be a number")] {
            do {
                _ = try RequestBodies.strictScrollReports(bytes(bad))
                Issue.record("\(bad) was accepted")
            } catch { #expect(error.detail.contains(detail), "\(error.detail)") }
        }
    }

    @Test func disappearBodies() throws {
        try RequestBodies.disappear([])
        try RequestBodies.disappear(bytes("{}"))
        #expect(throws: BodyError.self) { try RequestBodies.disappear(bytes(#"{"now":true}"#)) }
        #expect(throws: BodyError.self) { try RequestBodies.disappear(bytes("[]")) }
    }
}
