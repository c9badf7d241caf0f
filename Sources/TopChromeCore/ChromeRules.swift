/// Something that happens to a session's chrome.
public enum ChromeInput: Sendable, Hashable {
    case scroll(ScrollReport)
    case setInset(Double)
    /// The screen went away.
    case disappear
}

/// What became of one scroll report.
public enum ReportOutcome: Sendable, Hashable {
    /// It came from the vertical scroll view and decided `isRevealed`.
    case applied
    /// It came from a horizontal row and was ignored.
    case horizontal
    /// Its `seq` was not newer than one already applied; ignored.
    case stale
}

/// The rules of the top chrome, as a pure function from (state, input) to the
/// next state, so that every store applies them the same way.
public struct ChromeRules: Sendable, Hashable {
    /// The default threshold: one point, not zero, because the rubber band at
    /// the top jitters by fractions of a point and the island would flicker.
    public static let defaultRevealThreshold = 1.0

    /// The island shows while the effective offset is at most this many points.
    public var revealThreshold: Double

    public init(revealThreshold: Double = ChromeRules.defaultRevealThreshold) {
        self.revealThreshold = revealThreshold
    }

    public func apply(_ input: ChromeInput, to state: ChromeState) -> ChromeState {
        step(input, from: state).state
    }

    /// The next state, and for a scroll report what became of it.
    public func step(_ input: ChromeInput, from state: ChromeState) -> (state: ChromeState, report: ReportOutcome?) {
        var next = state
        switch input {
        case let .scroll(report):
            if let seq = report.seq {
                if let last = state.lastAppliedSeq, seq <= last { return (state, .stale) }
                next.lastAppliedSeq = seq
            }
            // Only the outer vertical scroll view counts: a horizontal row always
            // stands at y = 0 and would bring the island back far down the page.
            guard report.axis == .vertical else { return (next, .horizontal) }
            next.set(isRevealed: report.effectiveOffset <= revealThreshold)
            return (next, .applied)
        case let .setInset(inset):
            next.set(inset: inset)
        case .disappear:
            // Leaving a screen brings the island back, or the next screen
            // would arrive without navigation.
            next.set(isRevealed: true)
        }
        return (next, nil)
    }

    /// Applies inputs in order.
    public func apply(_ inputs: some Sequence<ChromeInput>, to state: ChromeState) -> ChromeState {
        inputs.reduce(state) { apply($1, to: $0) }
    }
}
