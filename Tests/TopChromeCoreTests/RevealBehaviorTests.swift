import Testing
@testable import TopChromeCore

/// The behaviours beside `revealAtTop`, and the rules that make them right on real devices.
@Suite struct RevealBehaviorTests {
    let rules = ChromeRules()

    func session(_ behavior: RevealBehavior, inset: Double = 100, height: Float? = nil, snap: Bool = false) -> ChromeState {
        ChromeState(inset: inset, settings: RevealSettings(behavior: behavior, collapsibleHeight: height, snap: snap))
    }

    func scrolled(_ offsets: [Double], from state: ChromeState, phase: ScrollReport.Phase? = nil) -> ChromeState {
        offsets.reduce(state) { rules.apply(.scroll(ScrollReport(contentOffsetY: $1, phase: phase)), to: $0) }
    }

    func report(_ y: Double, seq: UInt64? = nil, phase: ScrollReport.Phase? = nil, content: Double? = nil,
                viewport: Double? = nil, axis: ScrollReport.Axis = .vertical) -> ChromeInput {
        .scroll(ScrollReport(contentOffsetY: y, axis: axis, seq: seq, phase: phase, contentHeight: content, viewportHeight: viewport))
    }

    /// A stored state whose offset lies past its height (a state file or a
    /// hash written for another inset, or by hand) stands at the nearer end:
    /// no ratio of offset to height is too large to count, and reports and
    /// changes go on from there.
    @Test(arguments: [(1e-40, Float(-30), 1.0), (Double(Float.leastNonzeroMagnitude), -30, 1), (40, -Float.greatestFiniteMagnitude, 1),
                      (40, -.infinity, 1), (40, 5, 0), (40, .nan, 1), (40, -20, 0.5)])
    func anOffsetPastTheHeightStandsAtTheNearerEnd(inset: Double, tracked: Float, fraction: Double) {
        for behavior in [RevealBehavior.enterAlways, .exitUntilCollapsed] {
            let stored = ChromeState(inset: inset, isRevealed: true, version: 3, lastAppliedSeq: nil, behavior: behavior,
                                     trackedHeightOffset: tracked)
            #expect(stored.collapsedFraction == fraction, "\(behavior)")
            #expect(rules.apply([report(500), report(600), .setInset(inset), .disappear], to: stored).collapsedFraction == 0)
        }
    }

    @Test func revealAtTopIsTheDefaultAndCarriesTheNewMembers() {
        let state = ChromeState(inset: 59)
        #expect(state.behavior == .revealAtTop)
        #expect(!state.snap)
        #expect(state.collapsibleHeight == 59, "the whole inset by default")
        #expect(state.heightOffset == 0)
        #expect(state.collapsedFraction == 0)
        let hidden = scrolled([300], from: state)
        #expect(hidden.heightOffset == -59)
        #expect(hidden.collapsedFraction == 1)
        #expect(hidden.version == 2)
    }

    @Test func pinnedStaysRevealedAndStillOrdersReports() {
        var state = session(.pinned)
        state = rules.apply(report(500, seq: 4), to: state)
        #expect(state.isRevealed)
        #expect(state.version == 1)
        #expect(state.lastAppliedSeq == 4)
        #expect(rules.step(report(0, seq: 3), from: state).report == .stale)
    }

    @Test func enterAlwaysTracksTheDelta() {
        var state = scrolled([200], from: session(.enterAlways))
        #expect(state.heightOffset == 0, "the first report only sets where deltas start")
        state = scrolled([230], from: state)
        #expect(state.heightOffset == -30)
        #expect(state.collapsedFraction == 0.3)
        state = scrolled([400], from: state)
        #expect(state.heightOffset == -100, "clamped to the collapsible height")
        #expect(!state.isRevealed)
        state = scrolled([380], from: state)
        #expect(state.heightOffset == -80, "comes back as soon as the content is pulled down, far from the top")
    }

    @Test func fractionDrivenRevealHasHysteresis() {
        var state = scrolled([200, 250], from: session(.enterAlways))
        #expect(state.isRevealed, "half way is not hidden yet")
        state = scrolled([400], from: state)
        #expect(!state.isRevealed)
        state = scrolled([350], from: state)
        #expect(state.collapsedFraction == 0.5)
        #expect(!state.isRevealed, "half way back is not shown yet")
        state = scrolled([250], from: state)
        #expect(state.isRevealed)
    }

    @Test func exitUntilCollapsedFollowsThePosition() {
        var state = scrolled([40], from: session(.exitUntilCollapsed))
        #expect(state.heightOffset == -40)
        state = scrolled([900, 880], from: state)
        #expect(state.heightOffset == -100, "pulled down far from the top: stays collapsed")
        #expect(!state.isRevealed)
        state = scrolled([60], from: state)
        #expect(state.heightOffset == -60)
        #expect(!state.isRevealed)
    }

    @Test func collapsibleHeightCanBeChosen() {
        let state = scrolled([200, 240], from: session(.enterAlways, height: 50))
        #expect(state.collapsibleHeight == 50)
        #expect(state.heightOffset == -40)
        #expect(state.collapsedFraction == 0.8)
        #expect(session(.enterAlways, inset: 30, height: 50).collapsibleHeight == 30, "never more than the inset")
    }

    @Test func snapSettlesAtTheNearerEndAndTiesShow() {
        let moving = scrolled([200, 260], from: session(.enterAlways, snap: true))
        #expect(rules.apply(report(260, phase: .ended), to: moving).heightOffset == -100)
        let nearer = scrolled([200, 240], from: session(.enterAlways, snap: true))
        #expect(rules.apply(report(240, phase: .ended), to: nearer).heightOffset == 0)
        let tie = scrolled([200, 250], from: session(.enterAlways, snap: true))
        let settled = rules.apply(report(250, phase: .ended), to: tie)
        #expect(settled.heightOffset == 0)
        #expect(settled.isRevealed)
        let unsnapped = scrolled([200, 260], from: session(.enterAlways))
        #expect(rules.apply(report(260, phase: .ended), to: unsnapped).heightOffset == -60, "snap is off by default")
    }

    @Test(arguments: RevealBehavior.allCases)
    func atTheTopEveryBehaviourShowsFully(_ behavior: RevealBehavior) {
        let state = scrolled([300, 900, 1], from: session(behavior))
        #expect(state.isRevealed)
        #expect(state.heightOffset == 0)
        #expect(state.collapsedFraction == 0)
    }

    @Test func theBottomRubberBandDoesNotBringTheChromeBack() {
        var state = rules.apply([report(800, content: 2000, viewport: 1000), report(1000, content: 2000, viewport: 1000)],
                                to: session(.enterAlways))
        #expect(state.heightOffset == -100)
        state = rules.apply(report(1080, content: 2000, viewport: 1000), to: state)
        state = rules.apply(report(1010, content: 2000, viewport: 1000), to: state)
        #expect(state.heightOffset == -100, "springing back from past the end is not a pull down")
        #expect(!state.isRevealed)
        let unclamped = rules.apply([report(1080), report(1010)], to: state)
        #expect(unclamped.heightOffset == -30, "without the heights the spring reads as a pull")
    }

    @Test func horizontalReportsNeverCount() {
        let state = scrolled([200, 260], from: session(.enterAlways))
        let after = rules.apply([report(0, axis: .horizontal), report(900, axis: .horizontal)], to: state)
        #expect(after == state)
        #expect(scrolled([250], from: after).heightOffset == -50, "the delta is still from the last vertical report")
    }

    @Test func staleReportsChangeNothing() {
        let state = rules.apply([report(200, seq: 1), report(260, seq: 3)], to: session(.enterAlways))
        #expect(state.heightOffset == -60)
        #expect(rules.apply(report(900, seq: 2), to: state) == state)
        #expect(rules.apply(report(220, seq: 4), to: state).heightOffset == -20)
    }

    @Test func disappearShowsFullyAndForgetsTheLastOffset() {
        let state = scrolled([200, 400], from: session(.enterAlways))
        let left = rules.apply(.disappear, to: state)
        #expect(left.isRevealed)
        #expect(left.heightOffset == 0)
        #expect(left.lastOffset == nil)
        #expect(left.version == state.version + 1)
        #expect(scrolled([700], from: left).heightOffset == 0, "the next screen's first report is no delta")
    }

    @Test func aNewInsetClampsHeightAndOffset() {
        let state = scrolled([200, 280], from: session(.enterAlways, height: 90))
        let shorter = rules.apply(.setInset(60), to: state)
        #expect(shorter.collapsibleHeight == 60)
        #expect(shorter.heightOffset == -60)
        #expect(!shorter.isRevealed, "clamped to fully collapsed")
        let followed = rules.apply(.setInset(50), to: scrolled([200, 230], from: session(.enterAlways)))
        #expect(followed.collapsibleHeight == 50, "the default height follows the inset")
        #expect(followed.collapsedFraction == 0.6)
    }

    @Test func versionCountsOnlyWhatAWatcherSees() {
        var state = scrolled([200], from: session(.enterAlways))
        let version = state.version
        state = scrolled([200.4], from: state)
        #expect(state.heightOffset == -0.4 as Float)
        #expect(state.version == version, "less than a hundredth: no new version")
        state = scrolled([200.6], from: state)
        #expect(state.collapsedFraction == 0.01)
        #expect(state.version == version + 1)
        var gesture = state
        for step in 1...1000 { gesture = scrolled([200.6 + Double(step) / 10], from: gesture) }
        #expect(gesture.version - state.version == 99, "one version per hundredth, not one per report")
    }

    @Test func changingBehaviourKeepsWhereTheChromeStands() {
        let hidden = scrolled([500], from: ChromeState(inset: 80))
        let tracking = rules.apply(.setBehavior(RevealSettings(behavior: .enterAlways)), to: hidden)
        #expect(tracking.behavior == .enterAlways)
        #expect(tracking.heightOffset == -80)
        #expect(!tracking.isRevealed)
        #expect(tracking.version == hidden.version + 1)
        #expect(scrolled([480], from: tracking).heightOffset == -80, "deltas start again after a change")
        let pinned = rules.apply(.setBehavior(RevealSettings(behavior: .pinned, collapsibleHeight: 20, snap: true)), to: tracking)
        #expect(pinned.isRevealed)
        #expect(pinned.collapsibleHeight == 20)
        #expect(pinned.snap)
        let same = rules.apply(.setBehavior(RevealSettings(behavior: .pinned, collapsibleHeight: 20, snap: true)), to: pinned)
        #expect(same == pinned, "the same settings change nothing")
    }

    @Test func noChangePastTheLastVersion() {
        let last = ChromeState.allowedVersions.upperBound
        let state = ChromeState(inset: 100, isRevealed: true, version: last, lastAppliedSeq: nil, behavior: .enterAlways,
                                trackedHeightOffset: -10, lastOffset: 300)
        let after = rules.apply(report(380, seq: 9), to: state)
        #expect(after.version == last)
        #expect(after.heightOffset == -10)
        #expect(after.lastAppliedSeq == 9, "the report stays applied")
        #expect(rules.apply(.setBehavior(RevealSettings(behavior: .pinned)), to: state) == state)
    }
}
