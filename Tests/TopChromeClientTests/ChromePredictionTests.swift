import Testing
@testable import TopChromeClient
import struct TopChromeCore.ChromeRules
import enum TopChromeCore.RevealBehavior
import struct TopChromeCore.ScrollReport

/// The prediction against hand-made answers of the service: the orders in
/// which answers and numbers can arrive, which a live server rarely shows.
@Suite struct ChromePredictionTests {
    static let id = String(repeating: "a", count: 32)

    static func served(version: UInt64, lastSeq: UInt64? = nil, inset: Double = 59, revealed: Bool = true,
                       behavior: RevealBehavior = .enterAlways, heightOffset: Double = 0) -> SessionState {
        SessionState(id: id, inset: inset, isRevealed: revealed, version: version, lastSeq: lastSeq, behavior: behavior,
                    collapsedFraction: -heightOffset / inset, heightOffset: heightOffset)
    }

    static func report(_ offset: Double, _ phase: ScrollReport.Phase? = nil) -> ScrollReport {
        ScrollReport(contentOffsetY: offset, phase: phase)
    }

    /// Reports move the prediction at once, by the core's rules, and
    /// nothing is predicted before the first state names the behaviour.
    @Test func reportsApplyTheRulesAtOnce() throws {
        var prediction = ChromePrediction()
        #expect(prediction.predict(Self.report(300)) == nil, "no behaviour known yet")
        #expect(prediction.predicted == nil)

        prediction.reconcile(with: Self.served(version: 1))
        let start = try #require(prediction.predicted)
        let reports = [Self.report(0), Self.report(25), Self.report(40, .changed), Self.report(10)]
        for report in reports { _ = prediction.predict(report) }
        let expected = ChromeRules().apply(reports.map { .scroll($0) }, to: start)
        #expect(prediction.predicted == expected)
        #expect(prediction.predicted?.heightOffset == -10)
    }

    /// Another device moved the session: its state wins, and the reports
    /// made here that it does not include yet stay applied on top; once the
    /// service includes them, its state is shown as it is, even where it
    /// differs from what was predicted.
    @Test func aDifferingAnswerWins() throws {
        var prediction = ChromePrediction()
        prediction.reconcile(with: Self.served(version: 1))
        let firstTicket = prediction.predict(Self.report(0))
        let first = try #require(firstTicket)
        let secondTicket = prediction.predict(Self.report(100))
        let second = try #require(secondTicket)
        prediction.numbered(first, seq: 1)
        prediction.numbered(second, seq: 2)
        #expect(prediction.predicted?.collapsedFraction == 1)

        // The other device changed the inset before these reports landed.
        prediction.reconcile(with: Self.served(version: 2, inset: 47))
        #expect(prediction.predicted?.inset == 47)
        #expect(prediction.predicted?.collapsedFraction == 1, "the unanswered reports stay on top")

        // Both landed, and then the other device brought the chrome back.
        prediction.reconcile(with: Self.served(version: 4, lastSeq: 2, inset: 47, heightOffset: -20))
        #expect(prediction.predicted?.heightOffset == -20)
        #expect(prediction.predicted?.version == 4)
    }

    /// A state older than the reports (the stream is a round trip behind)
    /// does not pull the island back to where the finger was.
    @Test func anOlderStateDoesNotUndoTheFinger() throws {
        var prediction = ChromePrediction()
        prediction.reconcile(with: Self.served(version: 1, behavior: .revealAtTop))
        let reportTicket = prediction.predict(Self.report(300))
        let ticket = try #require(reportTicket)
        prediction.numbered(ticket, seq: 1)
        prediction.reconcile(with: Self.served(version: 1, behavior: .revealAtTop))
        #expect(prediction.predicted?.isRevealed == false)
        prediction.reconcile(with: Self.served(version: 2, lastSeq: 1, revealed: false, behavior: .revealAtTop,
                                               heightOffset: -59))
        #expect(prediction.predicted?.isRevealed == false)
    }

    /// The answer came before the session's number did: the report is in
    /// the answer, so it is not applied on top once more when numbered (here
    /// another device brought the chrome back after the report landed).
    @Test func anAnswerBeforeTheNumberIsNotAppliedTwice() throws {
        var prediction = ChromePrediction()
        prediction.reconcile(with: Self.served(version: 1, lastSeq: 4, behavior: .revealAtTop))
        let reportTicket = prediction.predict(Self.report(300))
        let ticket = try #require(reportTicket)
        prediction.reconcile(with: Self.served(version: 3, lastSeq: 5, behavior: .revealAtTop))
        #expect(prediction.predicted?.isRevealed == false, "not numbered yet: applied on top")
        prediction.numbered(ticket, seq: 5)
        #expect(prediction.predicted?.isRevealed == true)
        #expect(prediction.predicted?.version == 3)
    }

    /// The enterAlways offset deltas start from is carried over from the
    /// reports made here, so the next report's delta is the service's.
    @Test func deltasGoOnFromTheLastReportTheServiceApplied() throws {
        var prediction = ChromePrediction()
        prediction.reconcile(with: Self.served(version: 1))
        let firstTicket = prediction.predict(Self.report(100))
        let first = try #require(firstTicket)
        prediction.numbered(first, seq: 1)
        prediction.reconcile(with: Self.served(version: 1, lastSeq: 1))
        _ = prediction.predict(Self.report(120))
        #expect(prediction.predicted?.heightOffset == -20)
    }

    /// Offline, reports pile up unanswered: what is kept stays bounded, the
    /// prediction still counts every report, and a state that then comes
    /// has the kept ones applied on top.
    @Test func unansweredReportsStayBounded() throws {
        let reports = (0...5_000).map { Self.report(Double($0 % 3) * 20 + 2) }
        var prediction = ChromePrediction()
        prediction.reconcile(with: Self.served(version: 1))
        let start = try #require(prediction.predicted)
        for report in reports { _ = prediction.predict(report) }
        #expect(prediction.unansweredCount == ScrollBatch.limit)
        #expect(prediction.predicted == ChromeRules().apply(reports.map { .scroll($0) }, to: start))

        prediction.reconcile(with: Self.served(version: 2, inset: 47))
        var fresh = ChromePrediction()
        fresh.reconcile(with: Self.served(version: 2, inset: 47))
        for report in reports.suffix(ScrollBatch.limit) { _ = fresh.predict(report) }
        #expect(prediction.predicted?.heightOffset == fresh.predicted?.heightOffset)
        #expect(prediction.predicted?.isRevealed == fresh.predicted?.isRevealed)
        #expect(prediction.predicted?.inset == 47)
    }
}
