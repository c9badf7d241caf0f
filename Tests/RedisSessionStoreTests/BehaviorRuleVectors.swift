import TopChromeCore

private func session(_ behavior: RevealBehavior, inset: Double = 100, revealed: Bool = true, version: UInt64 = 1,
                     seq: UInt64? = nil, snap: Bool = false, height: Float? = nil, tracked: Float = 0,
                     last: Double? = nil) -> ChromeState {
    ChromeState(inset: inset, isRevealed: revealed, version: version, lastAppliedSeq: seq, behavior: behavior, snap: snap,
                chosenCollapsibleHeight: height, trackedHeightOffset: tracked, lastOffset: last)
}

private func report(_ offset: Double, seq: UInt64? = nil, ended: Bool = false, content: Double? = nil,
                    viewport: Double? = nil) -> ChromeInput {
    .scroll(ScrollReport(contentOffsetY: offset, seq: seq, phase: ended ? .ended : nil, contentHeight: content,
                         viewportHeight: viewport))
}

/// The behaviours' cases, run like the others against every store.
let behaviorRuleVectors: [RuleVector] = [
    RuleVector(description: "enterAlways: the first report sets where deltas start",
               start: session(.enterAlways), request: .apply([report(300)], if: .always),
               expected: .applied(session(.enterAlways, last: 300), reports: [.applied], events: [])),
    RuleVector(description: "enterAlways: moves by the delta, a new version per hundredth",
               start: session(.enterAlways, last: 300), request: .apply([report(340, seq: 1)], if: .always),
               expected: .applied(session(.enterAlways, version: 2, seq: 1, tracked: -40, last: 340), reports: [.applied],
                                  events: [session(.enterAlways, version: 2, seq: 1, tracked: -40, last: 340)])),
    RuleVector(description: "enterAlways: less than a hundredth keeps the version",
               start: session(.enterAlways, last: 300), request: .apply([report(300.4)], if: .always),
               expected: .applied(session(.enterAlways, tracked: -0.4, last: 300.4), reports: [.applied], events: [])),
    RuleVector(description: "enterAlways: the bottom rubber band is clamped away",
               start: session(.enterAlways, revealed: false, version: 5, tracked: -100, last: 1000),
               request: .apply([report(1080, content: 2000, viewport: 1000), report(1010, content: 2000, viewport: 1000)], if: .always),
               expected: .applied(session(.enterAlways, revealed: false, version: 5, tracked: -100, last: 1000),
                                  reports: [.applied, .applied], events: [])),
    RuleVector(description: "snap: a gesture's end settles at the nearer end",
               start: session(.enterAlways, version: 3, snap: true, tracked: -70, last: 370),
               request: .apply([report(370, ended: true)], if: .always),
               expected: .applied(session(.enterAlways, revealed: false, version: 4, snap: true, tracked: -100, last: 370),
                                  reports: [.applied],
                                  events: [session(.enterAlways, revealed: false, version: 4, snap: true, tracked: -100, last: 370)])),
    RuleVector(description: "exitUntilCollapsed follows the position; at the top it shows",
               start: session(.exitUntilCollapsed, height: 56), request: .apply([report(28), report(0.5)], if: .always),
               expected: .applied(session(.exitUntilCollapsed, version: 3, height: 56), reports: [.applied, .applied],
                                  events: [session(.exitUntilCollapsed, version: 2, height: 56, tracked: -28),
                                           session(.exitUntilCollapsed, version: 3, height: 56)])),
    RuleVector(description: "pinned stays shown and keeps the seq",
               start: session(.pinned), request: .apply([report(900, seq: 7)], if: .always),
               expected: .applied(session(.pinned, seq: 7), reports: [.applied], events: [])),
    RuleVector(description: "a smaller inset clamps the height and the offset",
               start: session(.enterAlways, version: 2, height: 90, tracked: -80, last: 280),
               request: .apply([.setInset(60)], if: .always),
               expected: .applied(session(.enterAlways, inset: 60, revealed: false, version: 3, height: 60, tracked: -60, last: 280),
                                  reports: [],
                                  events: [session(.enterAlways, inset: 60, revealed: false, version: 3, height: 60, tracked: -60,
                                                   last: 280)])),
    RuleVector(description: "disappear shows fully and forgets the last offset",
               start: session(.enterAlways, revealed: false, version: 4, tracked: -100, last: 500),
               request: .apply([.disappear], if: .always),
               expected: .applied(session(.enterAlways, version: 5), reports: [], events: [session(.enterAlways, version: 5)])),
    RuleVector(description: "setBehavior keeps where the chrome stands",
               start: ChromeState(inset: 80, isRevealed: false, version: 2, lastAppliedSeq: nil),
               request: .apply([.setBehavior(RevealSettings(behavior: .enterAlways, snap: true))], if: .oneOf([EntityTag(version: 2, tag: RuleVector.startTag)])),
               expected: .applied(session(.enterAlways, inset: 80, revealed: false, version: 3, snap: true, tracked: -80),
                                  reports: [],
                                  events: [session(.enterAlways, inset: 80, revealed: false, version: 3, snap: true, tracked: -80)])),
]
