/// How the island answers scrolling: the behaviours people know from their
/// platforms' toolkits, chosen per session.
public enum RevealBehavior: String, Sendable, Hashable, CaseIterable {
    /// Shown at the very top, hidden anywhere below: the original app's rule.
    case revealAtTop
    /// Always shown (Material's *pinned*); reports are still ordered.
    case pinned
    /// Collapses as content is pulled up and comes back as soon as it is
    /// pulled down, tracking the finger (Material's *enterAlways*, mobile
    /// browsers' toolbars, UIKit's `hidesBarsOnSwipe`).
    case enterAlways
    /// Collapses as content is pulled up, expands only near the top
    /// (Material's *exitUntilCollapsed*).
    case exitUntilCollapsed

    /// Whether a collapsed fraction, rather than the offset alone, decides `isRevealed`.
    var followsFraction: Bool {
        self == .enterAlways || self == .exitUntilCollapsed
    }
}

/// A session's choice of behaviour, as `POST /v1/sessions` and
/// `PUT /v1/sessions/{id}/behavior` carry it.
public struct RevealSettings: Sendable, Hashable {
    /// Heights a client may choose, in points: the range of insets.
    public static let allowedCollapsibleHeights: ClosedRange<Float> = 0...10_000

    public var behavior: RevealBehavior
    /// How far the chrome collapses; nil collapses the whole inset, following it as it changes.
    public var collapsibleHeight: Float?
    /// Whether a gesture's end settles the chrome fully shown or fully hidden.
    public var snap: Bool

    public init(behavior: RevealBehavior = .revealAtTop, collapsibleHeight: Float? = nil, snap: Bool = false) {
        self.behavior = behavior
        self.collapsibleHeight = collapsibleHeight
        self.snap = snap
    }
}
