import TopChromeCore

/// One case of the shared vectors: a session as it stands, one request, and
/// everything that must come of it, in any store.
struct RuleVector: Sendable, CustomStringConvertible {
    enum Request: Sendable {
        case apply([ChromeInput], if: VersionCondition)
        case remove(if: VersionCondition)
    }

    /// What a subscriber of the session receives.
    enum Event: Sendable, Hashable {
        case changed(ChromeState)
        case removed
    }

    enum Expected: Sendable {
        /// Applied: the state after it, what became of each scroll report, and one event per new version.
        case applied(ChromeState, reports: [ReportOutcome], events: [ChromeState])
        /// Removed: the session is gone and subscribers are told.
        case removed
        /// The condition did not hold: nothing changes, nothing is published, the expiry does not slide.
        case conditionFailed
        case notFound
    }

    /// The tag of every vector's starting state: conditions name states by
    /// version and tag (`tags(_:)`).
    static let startTag = StateTag(bits: 0x0000_5ea5_0001)
    /// A tag no starting state has: another state that had the same version.
    static let otherTag = StateTag(bits: 0x0000_5ea5_0002)

    let description: String
    /// Nil: no such session. Tagged `startTag`.
    var start: ChromeState?
    var threshold = ChromeRules.defaultRevealThreshold
    let request: Request
    let expected: Expected
}

private let maxVersion: UInt64 = (1 << 53) - 1

/// The starting states of these versions, by their entity tags.
private func tags(_ versions: UInt64...) -> Set<EntityTag> {
    Set(versions.map { EntityTag(version: $0, tag: RuleVector.startTag) })
}

private func state(_ inset: Double = 0, revealed: Bool = true, version: UInt64 = 1, seq: UInt64? = nil) -> ChromeState {
    ChromeState(inset: inset, isRevealed: revealed, version: version, lastAppliedSeq: seq)
}

private func scroll(_ offset: Double, top: Double = 0, horizontal: Bool = false, seq: UInt64? = nil) -> ChromeInput {
    .scroll(ScrollReport(contentOffsetY: offset, contentInsetTop: top, axis: horizontal ? .horizontal : .vertical, seq: seq))
}

private func apply(_ inputs: ChromeInput..., if condition: VersionCondition = .always) -> RuleVector.Request {
    .apply(inputs, if: condition)
}

/// The definition of "the same rules" for every store: ChromeRules and the
/// memory store, the Lua library on one Redis, and on a cluster.
let ruleVectors: [RuleVector] = [
    // The reveal threshold, compared as `effective offset <= threshold`.
    RuleVector(description: "offset exactly at the threshold reveals",
               start: state(revealed: false, version: 2), request: apply(scroll(1)),
               expected: .applied(state(version: 3), reports: [.applied], events: [state(version: 3)])),
    RuleVector(description: "offset just past the threshold hides",
               start: state(), request: apply(scroll(1.0000001)),
               expected: .applied(state(revealed: false, version: 2), reports: [.applied], events: [state(revealed: false, version: 2)])),
    RuleVector(description: "offset just under the threshold reveals",
               start: state(revealed: false, version: 2), request: apply(scroll(0.9999999)),
               expected: .applied(state(version: 3), reports: [.applied], events: [state(version: 3)])),
    RuleVector(description: "inset top is added back: -44 + 45 is exactly the threshold",
               start: state(revealed: false, version: 2), request: apply(scroll(-44, top: 45)),
               expected: .applied(state(version: 3), reports: [.applied], events: [state(version: 3)])),
    RuleVector(description: "inset top is added back: -44 + 45.0000001 is past it",
               start: state(), request: apply(scroll(-44, top: 45.0000001)),
               expected: .applied(state(revealed: false, version: 2), reports: [.applied], events: [state(revealed: false, version: 2)])),
    RuleVector(description: "doubles add alike: 0.1 + 0.2 is past a threshold of 0.3",
               start: state(), threshold: 0.3, request: apply(scroll(0.1, top: 0.2)),
               expected: .applied(state(revealed: false, version: 2), reports: [.applied], events: [state(revealed: false, version: 2)])),
    RuleVector(description: "threshold 0: the smallest subnormal offset hides",
               start: state(), threshold: 0, request: apply(scroll(.leastNonzeroMagnitude)),
               expected: .applied(state(revealed: false, version: 2), reports: [.applied], events: [state(revealed: false, version: 2)])),
    RuleVector(description: "threshold 0: negative zero is at the top",
               start: state(revealed: false, version: 2), threshold: 0, request: apply(scroll(-0.0)),
               expected: .applied(state(version: 3), reports: [.applied], events: [state(version: 3)])),
    RuleVector(description: "the rubber band above the top reveals",
               start: state(revealed: false, version: 2), request: apply(scroll(-30)),
               expected: .applied(state(version: 3), reports: [.applied], events: [state(version: 3)])),
    RuleVector(description: "huge finite offsets that cancel are at the top",
               start: state(revealed: false, version: 2),
               request: apply(scroll(1.7976931348623157e308, top: -1.7976931348623157e308)),
               expected: .applied(state(version: 3), reports: [.applied], events: [state(version: 3)])),
    RuleVector(description: "the largest finite offset hides, the most negative reveals",
               start: state(), request: apply(scroll(1.7976931348623157e308), scroll(-1.7976931348623157e308)),
               expected: .applied(state(version: 3), reports: [.applied, .applied],
                                  events: [state(revealed: false, version: 2), state(version: 3)])),

    // Insets.
    RuleVector(description: "a new inset is a new version",
               start: state(), request: apply(.setInset(44.5)),
               expected: .applied(state(44.5, version: 2), reports: [], events: [state(44.5, version: 2)])),
    RuleVector(description: "the same inset changes nothing",
               start: state(44.5, version: 7), request: apply(.setInset(44.5)),
               expected: .applied(state(44.5, version: 7), reports: [], events: [])),
    RuleVector(description: "negative zero on zero changes nothing, and zero keeps its sign",
               start: state(0), request: apply(.setInset(-0.0)),
               expected: .applied(state(0), reports: [], events: [])),
    RuleVector(description: "zero on negative zero changes nothing, and negative zero keeps its sign",
               start: state(-0.0), request: apply(.setInset(0)),
               expected: .applied(state(-0.0), reports: [], events: [])),
    RuleVector(description: "negative zero is stored with its sign",
               start: state(5), request: apply(.setInset(-0.0)),
               expected: .applied(state(-0.0, version: 2), reports: [], events: [state(-0.0, version: 2)])),
    RuleVector(description: "insets that need 16 and 17 digits, subnormal and largest, come back exactly",
               start: state(),
               request: apply(.setInset(0.1), .setInset(1.0 / 3), .setInset(0.30000000000000004), .setInset(.leastNonzeroMagnitude),
                              .setInset(2.2250738585072014e-308), .setInset(1.7976931348623157e308), .setInset(123456789.00000001)),
               expected: .applied(state(123456789.00000001, version: 8), reports: [], events: [
                   state(0.1, version: 2), state(1.0 / 3, version: 3), state(0.30000000000000004, version: 4),
                   state(.leastNonzeroMagnitude, version: 5), state(2.2250738585072014e-308, version: 6),
                   state(1.7976931348623157e308, version: 7), state(123456789.00000001, version: 8),
               ])),

    // Horizontal rows never decide.
    RuleVector(description: "a horizontal row at y = 0 is ignored",
               start: state(revealed: false, version: 2), request: apply(scroll(0, horizontal: true)),
               expected: .applied(state(revealed: false, version: 2), reports: [.horizontal], events: [])),
    RuleVector(description: "a horizontal row's seq still counts",
               start: state(revealed: false, version: 2, seq: 4), request: apply(scroll(0, horizontal: true, seq: 5), scroll(0, seq: 5)),
               expected: .applied(state(revealed: false, version: 2, seq: 5), reports: [.horizontal, .stale], events: [])),

    // Sequence numbers.
    RuleVector(description: "a seq equal to the last is stale",
               start: state(revealed: false, version: 2, seq: 9), request: apply(scroll(0, seq: 9)),
               expected: .applied(state(revealed: false, version: 2, seq: 9), reports: [.stale], events: [])),
    RuleVector(description: "a lower seq is stale",
               start: state(revealed: false, version: 2, seq: 9), request: apply(scroll(0, seq: 3)),
               expected: .applied(state(revealed: false, version: 2, seq: 9), reports: [.stale], events: [])),
    RuleVector(description: "a higher seq applies",
               start: state(revealed: false, version: 2, seq: 9), request: apply(scroll(0, seq: 10)),
               expected: .applied(state(version: 3, seq: 10), reports: [.applied], events: [state(version: 3, seq: 10)])),
    RuleVector(description: "seq 0 is a seq: first applies, second is stale",
               start: state(), request: apply(scroll(100, seq: 0), scroll(0, seq: 0)),
               expected: .applied(state(revealed: false, version: 2, seq: 0), reports: [.applied, .stale],
                                  events: [state(revealed: false, version: 2, seq: 0)])),
    RuleVector(description: "reports without seq always apply and keep the seq",
               start: state(revealed: false, version: 2, seq: 9), request: apply(scroll(0), scroll(50)),
               expected: .applied(state(revealed: false, version: 4, seq: 9), reports: [.applied, .applied],
                                  events: [state(version: 3, seq: 9), state(revealed: false, version: 4, seq: 9)])),
    RuleVector(description: "the largest seq, then nothing newer exists",
               start: state(seq: (1 << 53) - 2), request: apply(scroll(100, seq: (1 << 53) - 1), scroll(0, seq: (1 << 53) - 1)),
               expected: .applied(state(revealed: false, version: 2, seq: (1 << 53) - 1), reports: [.applied, .stale],
                                  events: [state(revealed: false, version: 2, seq: (1 << 53) - 1)])),
    RuleVector(description: "an old far-down report after a newer top one changes nothing",
               start: state(), request: apply(scroll(0, seq: 8), scroll(900, seq: 7)),
               expected: .applied(state(seq: 8), reports: [.applied, .stale], events: [])),

    // Batches and conditions.
    RuleVector(description: "a batch publishes each new version in order",
               start: state(), request: apply(scroll(200, seq: 1), .setInset(20), .disappear, scroll(0, seq: 2)),
               expected: .applied(state(20, version: 4, seq: 2), reports: [.applied, .applied], events: [
                   state(revealed: false, version: 2, seq: 1), state(20, revealed: false, version: 3, seq: 1), state(20, version: 4, seq: 1),
               ])),
    RuleVector(description: "If-Match that holds lets the batch through",
               start: state(version: 5), request: apply(scroll(200), .setInset(3), if: .oneOf(tags(4, 5))),
               expected: .applied(state(3, revealed: false, version: 7), reports: [.applied],
                                  events: [state(revealed: false, version: 6), state(3, revealed: false, version: 7)])),
    RuleVector(description: "If-Match that fails changes nothing, not even the seq",
               start: state(version: 5, seq: 1), request: apply(scroll(200, seq: 2), .setInset(3), if: .oneOf(tags(4))),
               expected: .conditionFailed),
    RuleVector(description: "If-None-Match of the current version fails",
               start: state(version: 5), request: apply(.disappear, .setInset(3), if: .noneOf(tags(5))),
               expected: .conditionFailed),
    RuleVector(description: "If-Match of the version with another tag fails: a lost state that had the version",
               start: state(version: 5), request: apply(.setInset(3), if: .oneOf([EntityTag(version: 5, tag: RuleVector.otherTag)])),
               expected: .conditionFailed),
    RuleVector(description: "If-None-Match of the version with another tag holds",
               start: state(version: 5), request: apply(.setInset(3), if: .noneOf([EntityTag(version: 5, tag: RuleVector.otherTag)])),
               expected: .applied(state(3, version: 6), reports: [], events: [state(3, version: 6)])),
    RuleVector(description: "remove with If-Match of the version with another tag keeps the session",
               start: state(version: 4), request: .remove(if: .oneOf([EntityTag(version: 4, tag: RuleVector.otherTag)])),
               expected: .conditionFailed),
    RuleVector(description: "never fails",
               start: state(), request: apply(.setInset(3), if: .never), expected: .conditionFailed),
    RuleVector(description: "an empty version set fails",
               start: state(), request: apply(.setInset(3), if: .oneOf(tags())), expected: .conditionFailed),
    RuleVector(description: "all of several conditions that hold",
               start: state(version: 3), request: apply(.setInset(3), if: .all([.oneOf(tags(3, 4)), .noneOf(tags(4)), .all([])])),
               expected: .applied(state(3, version: 4), reports: [], events: [state(3, version: 4)])),
    RuleVector(description: "all of several conditions, one failing",
               start: state(version: 4), request: apply(.setInset(3), if: .all([.oneOf(tags(3, 4)), .noneOf(tags(4))])),
               expected: .conditionFailed),
    RuleVector(description: "versions past 2^53 - 1 in a condition match no session",
               start: state(version: maxVersion), request: apply(.setInset(3), if: .oneOf(tags(UInt64.max, 1 << 53))),
               expected: .conditionFailed),
    RuleVector(description: "and never count as the current version",
               start: state(version: maxVersion - 1), request: apply(.setInset(3), if: .noneOf(tags(UInt64.max, 1 << 53, maxVersion))),
               expected: .applied(state(3, version: maxVersion), reports: [], events: [state(3, version: maxVersion)])),
    RuleVector(description: "an empty batch changes nothing and is a use",
               start: state(7, revealed: false, version: 9, seq: 3), request: apply(),
               expected: .applied(state(7, revealed: false, version: 9, seq: 3), reports: [], events: [])),

    // Leaving a screen.
    RuleVector(description: "disappear reveals",
               start: state(revealed: false, version: 2), request: apply(.disappear),
               expected: .applied(state(version: 3), reports: [], events: [state(version: 3)])),
    RuleVector(description: "disappear when revealed changes nothing",
               start: state(version: 2), request: apply(.disappear),
               expected: .applied(state(version: 2), reports: [], events: [])),
    RuleVector(description: "scrolling further down keeps the version",
               start: state(revealed: false, version: 2), request: apply(scroll(300), scroll(500, top: 44)),
               expected: .applied(state(revealed: false, version: 2), reports: [.applied, .applied], events: [])),

    // The version cap.
    RuleVector(description: "at the last version nothing changes but the seq",
               start: state(revealed: false, version: maxVersion, seq: 1), request: apply(scroll(0, seq: 2), .setInset(9), .disappear),
               expected: .applied(state(revealed: false, version: maxVersion, seq: 2), reports: [.applied], events: [])),
    RuleVector(description: "one version before the last takes exactly one change",
               start: state(version: maxVersion - 1), request: apply(.setInset(1), .setInset(2)),
               expected: .applied(state(1, version: maxVersion), reports: [], events: [state(1, version: maxVersion)])),

    // Removal.
    RuleVector(description: "remove", start: state(3, version: 4), request: .remove(if: .always), expected: .removed),
    RuleVector(description: "remove with If-Match that holds",
               start: state(version: 4), request: .remove(if: .oneOf(tags(4))), expected: .removed),
    RuleVector(description: "remove with If-Match that fails keeps the session",
               start: state(version: 4), request: .remove(if: .oneOf(tags(3))), expected: .conditionFailed),

    // No session.
    RuleVector(description: "apply to no session", start: nil, request: apply(.disappear), expected: .notFound),
    RuleVector(description: "remove no session", start: nil, request: .remove(if: .always), expected: .notFound),
]
