/// Something that happens to a session's chrome.
public enum ChromeInput: Sendable, Hashable {
    case scroll(ScrollReport)
    case setInset(Double)
    /// The screen went away.
    case disappear
    /// The app chose another behaviour for the session.
    case setBehavior(RevealSettings)
}

/// What became of one scroll report.
public enum ReportOutcome: Sendable, Hashable {
    /// It came from the vertical scroll view and was applied by the behaviour.
    case applied
    /// It came from a horizontal row and was ignored.
    case horizontal
    /// Its `seq` was not newer than one already applied; ignored.
    case stale
}

/// The rules of the top chrome, as a pure function from (state, input) to the
/// next state, so that every store, and a client predicting, applies them the same way.
public struct ChromeRules: Sendable, Hashable {
    /// The default threshold: one point, not zero, because the rubber band at
    /// the top jitters by fractions of a point and the island would flicker.
    public static let defaultRevealThreshold = 1.0

    /// The chrome shows fully while the effective offset is at most this many points.
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
            // Deltas are taken between ordered reports: an old report arriving
            // late would move the chrome by a distance nobody scrolled.
            if let seq = report.seq {
                if let last = state.lastAppliedSeq, seq <= last { return (state, .stale) }
                next.lastAppliedSeq = seq
            }
            // Only the outer vertical scroll view counts: a horizontal row always
            // stands at y = 0 and would bring the island back far down the page.
            guard report.axis == .vertical else { return (next, .horizontal) }
            switch state.behavior {
            case .revealAtTop:
                next.set(isRevealed: report.scrollableOffset <= revealThreshold)
            case .pinned:
                break
            case .enterAlways, .exitUntilCollapsed:
                follow(report, &next)
                next.commit(from: state)
            }
            return (next, .applied)
        case let .setInset(inset):
            // An equal inset keeps its sign: a client reads back the zero it wrote first.
            if inset != next.inset { next.inset = inset }
            // A shorter chrome cannot collapse further than it is tall.
            if let chosen = next.chosenCollapsibleHeight {
                next.chosenCollapsibleHeight = ChromeState.chosenHeight(chosen, within: inset)
            }
            next.trackedHeightOffset = next.trackedHeightOffset.atLeast(-next.collapsibleHeight)
            next.settleRevealed()
            next.commit(from: state)
        case .disappear:
            // Leaving a screen brings the island back, or the next screen
            // would arrive without navigation; its scroll view starts anew,
            // so the last offset means nothing there.
            next.lastOffset = nil
            next.trackedHeightOffset = 0
            next.isRevealed = true
            next.commit(from: state)
        case let .setBehavior(settings):
            // The chrome stays where it stands and the new behaviour takes it
            // from there; deltas start again with the next report.
            let standing = state.heightOffset
            next.behavior = settings.behavior
            next.snap = settings.snap
            next.chosenCollapsibleHeight = settings.collapsibleHeight.map { ChromeState.chosenHeight($0, within: next.inset) }
            next.lastOffset = nil
            switch settings.behavior {
            case .revealAtTop:
                next.trackedHeightOffset = 0
            case .pinned:
                next.trackedHeightOffset = 0
                next.isRevealed = true
            case .enterAlways, .exitUntilCollapsed:
                next.trackedHeightOffset = standing.atLeast(-next.collapsibleHeight)
                next.settleRevealed()
            }
            next.commit(from: state)
        }
        return (next, nil)
    }

    /// Moves a fraction-driven chrome by a vertical report.
    private func follow(_ report: ScrollReport, _ state: inout ChromeState) {
        // Clamped into the doubles, so a delta is never inf − inf.
        let offset = report.scrollableOffset.atLeast(-.greatestFiniteMagnitude).atMost(.greatestFiniteMagnitude)
        let height = Double(state.collapsibleHeight)
        var heightOffset: Double
        if offset <= revealThreshold {
            // At the top every behaviour shows the chrome fully, whatever came before.
            heightOffset = 0
        } else if state.behavior == .exitUntilCollapsed {
            // Follows the position: collapsed by how far the content is scrolled.
            heightOffset = -offset.atMost(height)
        } else if let last = state.lastOffset {
            // Tracks the finger: moves by the delta, within the chrome's height.
            heightOffset = (Double(state.trackedHeightOffset) - (offset - last)).atLeast(-height).atMost(0)
        } else {
            // The first report after a change of screen or behaviour only sets where deltas start.
            heightOffset = Double(state.trackedHeightOffset)
        }
        if state.behavior == .enterAlways { state.lastOffset = offset }
        // A lifted finger leaves no chrome half way: it settles to whichever
        // end is nearer, and a tie shows it.
        if state.snap, report.phase == .ended {
            heightOffset = -heightOffset * 2 > height ? -height : 0
        }
        state.trackedHeightOffset = Float(heightOffset)
        state.settleRevealed()
    }

    /// Applies inputs in order.
    public func apply(_ inputs: some Sequence<ChromeInput>, to state: ChromeState) -> ChromeState {
        inputs.reduce(state) { apply($1, to: $0) }
    }
}

extension BinaryFloatingPoint {
    /// `min`, spelled so that the function library computes it alike: of
    /// two equal values (0 and −0) it keeps `self`, which `Swift.min` does not promise.
    @inline(__always)
    func atMost(_ bound: Self) -> Self { self > bound ? bound : self }

    /// `max`, likewise.
    @inline(__always)
    func atLeast(_ bound: Self) -> Self { self < bound ? bound : self }
}

extension ChromeState {
    /// `isRevealed` where a fraction drives it flips only at the ends, not
    /// back and forth while the chrome is half way.
    mutating func settleRevealed() {
        guard behavior.followsFraction else { return }
        switch collapsedPercent {
        case 0: isRevealed = true
        case 100: isRevealed = false
        default: break
        }
    }
}
