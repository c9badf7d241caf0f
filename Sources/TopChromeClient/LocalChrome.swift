import TopChromeCore

/// The service's side played in memory, for a `RemoteTopChrome` made with
/// `local(_:)`: the core's own rules applied to one state, each change
/// answered as the service would announce it. So a preview or an app's
/// unit test sees the chrome move as it would against the service, with
/// no network.
struct LocalChrome {
    let id: String
    private var state: TopChromeCore.ChromeState
    private let rules = ChromeRules()
    /// Deleted: every later call is answered as for a session that is gone.
    private(set) var isGone = false

    init(_ served: SessionState) {
        id = served.id
        state = TopChromeCore.ChromeState(served: served)
    }

    /// The state as the service would announce it now.
    var served: SessionState { SessionState(id: id, state) }

    /// The state as the service would answer it: none once deleted.
    func answer() throws(TopChromeError) -> SessionState {
        guard !isGone else { throw .sessionGone(id: id) }
        return served
    }

    /// Applies a change as the service would (refusing what it refuses),
    /// and answers the state after it.
    mutating func apply(_ input: ChromeInput) throws(TopChromeError) -> SessionState {
        guard !isGone else { throw .sessionGone(id: id) }
        if let refusal = Self.refusal(of: input) { throw refusal }
        state = rules.apply(input, to: state)
        return served
    }

    mutating func delete() throws(TopChromeError) {
        guard !isGone else { throw .sessionGone(id: id) }
        isGone = true
    }

    /// What the service (or the client, before sending) refuses: a value
    /// that is not finite, an inset or a height outside what it takes.
    static func refusal(of input: ChromeInput) -> TopChromeError? {
        switch input {
        case let .scroll(report):
            ChromeSession.refusal(contentOffsetY: report.contentOffsetY, contentInsetTop: report.contentInsetTop,
                                  contentHeight: report.contentHeight, viewportHeight: report.viewportHeight)
                .map { .invalidValue($0) }
        case let .setInset(inset) where !inset.isFinite:
            .invalidValue("inset \(inset) is not finite")
        case let .setInset(inset) where !TopChromeCore.ChromeState.allowedInsets.contains(inset):
            .rejected(Problem(status: 400, detail: "inset must be within \(TopChromeCore.ChromeState.allowedInsets)"))
        case let .setBehavior(settings):
            settings.collapsibleHeight.flatMap { height in
                RevealSettings.allowedCollapsibleHeights.contains(height) ? nil
                    : .rejected(Problem(status: 400, detail: "collapsibleHeight must be within \(RevealSettings.allowedCollapsibleHeights)"))
            }
        default:
            nil
        }
    }

    /// Another writer's state (as from another device) replaces this one.
    mutating func replace(with served: SessionState) {
        state = TopChromeCore.ChromeState(served: served)
    }
}

extension TopChromeCore.ChromeState {
    /// The core's state behind one the service answered. `lastOffset`, the
    /// offset `enterAlways` takes its next delta from, is not in an answer:
    /// given where it is known, none otherwise.
    init(served: SessionState, lastOffset: Double? = nil) {
        self.init(inset: served.inset, isRevealed: served.isRevealed, version: max(served.version, 1),
                  lastAppliedSeq: served.lastSeq, behavior: served.behavior, snap: served.snap,
                  chosenCollapsibleHeight: served.collapsibleHeight == served.inset ? nil : Float(served.collapsibleHeight),
                  trackedHeightOffset: Float(served.heightOffset), lastOffset: lastOffset)
    }
}

extension SessionState {
    /// A core state as the service answers it.
    init(id: String, _ state: TopChromeCore.ChromeState) {
        self.init(id: id, inset: state.inset, isRevealed: state.isRevealed, version: state.version,
                  lastSeq: state.lastAppliedSeq, behavior: state.behavior, collapsibleHeight: Double(state.collapsibleHeight),
                  snap: state.snap, collapsedFraction: state.collapsedFraction, heightOffset: Double(state.heightOffset))
    }
}
