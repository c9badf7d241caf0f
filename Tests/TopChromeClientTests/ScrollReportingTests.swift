import Testing
@testable import TopChromeClient

/// What `reportsTopChrome(to:)` reports from a scroll view's geometry and
/// phases (issue 37 item 12), tested without SwiftUI.
@Suite struct ScrollReportingTests {
    static func at(_ offset: Double) -> ScrollReporting.Geometry {
        ScrollReporting.Geometry(contentOffsetY: offset, contentInsetTop: 59, contentHeight: 4000, viewportHeight: 800)
    }

    /// A drag and its deceleration: each move reported, the end once with
    /// `.ended` at the last place, and nothing twice.
    @Test func aGestureEndsWithOneEndedReport() {
        var reporting = ScrollReporting()
        #expect(reporting.phaseChanged(isMoving: true) == nil, "a gesture's start says nothing")
        #expect(reporting.moved(to: Self.at(-59)) == .init(geometry: Self.at(-59), phase: nil))
        #expect(reporting.moved(to: Self.at(120)) == .init(geometry: Self.at(120), phase: nil))
        #expect(reporting.moved(to: Self.at(120)) == nil, "the same place again")
        #expect(reporting.phaseChanged(isMoving: true) == nil, "interacting, then decelerating")
        #expect(reporting.phaseChanged(isMoving: false) == .init(geometry: Self.at(120), phase: .ended))
        #expect(reporting.phaseChanged(isMoving: false) == nil, "idle again is no second end")
    }

    /// A phase that ends before anything moved (a tap) reports nothing.
    @Test func anEndWithoutAMoveReportsNothing() {
        var reporting = ScrollReporting()
        _ = reporting.phaseChanged(isMoving: true)
        #expect(reporting.phaseChanged(isMoving: false) == nil)
    }

    /// The reports reach the chrome: with snap, the end settles it.
    @Test @MainActor func theEndSettlesASnappingChrome() {
        let chrome = RemoteTopChrome.local(SessionState(id: "snap", inset: 59, isRevealed: true, version: 1,
                                                        behavior: .enterAlways, snap: true))
        var reporting = ScrollReporting()
        _ = reporting.phaseChanged(isMoving: true)
        for offset in stride(from: -59.0, through: -29, by: 10) {
            reporting.moved(to: Self.at(offset)).map(chrome.report)
        }
        #expect(chrome.collapsedFraction > 0 && chrome.collapsedFraction < 1, "half way: \(chrome.collapsedFraction)")
        reporting.phaseChanged(isMoving: false).map(chrome.report)
        #expect(chrome.collapsedFraction == 0 || chrome.collapsedFraction == 1, "settled: \(chrome.collapsedFraction)")
    }
}
