/// The top chrome of one app session: the status bar plus the floating island.
///
/// The values belong together and are read by parts of the app far apart:
/// the hero header pulls itself up by `inset`, the root view shows or hides the
/// island by `isRevealed`, and an animated bar follows `collapsedFraction`.
public struct ChromeState: Sendable, Hashable {
    /// Insets a client may set, in points. Finite, so every reader can lay out with it.
    public static let allowedInsets: ClosedRange<Double> = 0...10_000
    /// Versions a session can have: integers every JSON reader holds exactly
    /// (2^53 − 1 at most; a browser's `Number` rounds past it), so the
    /// version a client reads from a body, an ETag or a state file is the
    /// one the server means. That many changes take a million a second for
    /// 285 years: only a hand-made state file can start a session near it.
    public static let allowedVersions: ClosedRange<UInt64> = 1...((1 << 53) - 1)

    /// How tall status bar and island are together; content starts this far down.
    public internal(set) var inset: Double
    /// Whether the island shows. For `revealAtTop` it shows at the top and
    /// hides below; where a fraction drives it, it flips only at fully
    /// hidden and fully shown, so a chrome half way does not flicker.
    public internal(set) var isRevealed: Bool
    /// Grows by one on every change a watcher sees (every member but
    /// `heightOffset` and `lastAppliedSeq`), and only then, so a client can
    /// tell "nothing new" from "changed" by comparing versions.
    public internal(set) var version: UInt64
    /// Highest `seq` of a scroll report applied so far. Networks reorder, and
    /// an old "far down" arriving after a newer "at the top" must not hide the island.
    public internal(set) var lastAppliedSeq: UInt64?
    public internal(set) var behavior: RevealBehavior
    /// Whether a gesture's end settles the chrome fully shown or hidden.
    public internal(set) var snap: Bool
    /// The height the client chose; nil collapses the whole inset.
    public internal(set) var chosenCollapsibleHeight: Float?
    /// `heightOffset` as `enterAlways` and `exitUntilCollapsed` keep it; 0 for the others.
    public internal(set) var trackedHeightOffset: Float
    /// The last vertical offset `enterAlways` saw, within the scrollable
    /// range: the next report's delta is taken from it. Nil until a report
    /// comes, after the screen went away, and for other behaviours.
    public internal(set) var lastOffset: Double?

    /// A new session's chrome: revealed, because every screen starts at the top.
    public init(inset: Double = 0, settings: RevealSettings = RevealSettings()) {
        self.init(inset: inset, isRevealed: true, version: 1, lastAppliedSeq: nil)
        behavior = settings.behavior
        snap = settings.snap
        chosenCollapsibleHeight = settings.collapsibleHeight.map { Self.chosenHeight($0, within: inset) }
    }

    /// A state exactly as stored, e.g. read back from another store.
    public init(inset: Double, isRevealed: Bool, version: UInt64, lastAppliedSeq: UInt64?,
                behavior: RevealBehavior = .revealAtTop, snap: Bool = false, chosenCollapsibleHeight: Float? = nil,
                trackedHeightOffset: Float = 0, lastOffset: Double? = nil) {
        self.inset = inset
        self.isRevealed = isRevealed
        self.version = version
        self.lastAppliedSeq = lastAppliedSeq
        self.behavior = behavior
        self.snap = snap
        self.chosenCollapsibleHeight = chosenCollapsibleHeight
        self.trackedHeightOffset = trackedHeightOffset
        self.lastOffset = lastOffset
    }

    /// How far the chrome collapses, in points: the chosen height, or the
    /// whole inset; within the heights a client may choose, whatever inset a
    /// state file or another store holds.
    public var collapsibleHeight: Float {
        Self.heightWithin(chosenCollapsibleHeight ?? Float(inset))
    }

    /// A chosen height no taller than the chrome of `inset`: a chrome cannot
    /// collapse further than it is tall.
    static func chosenHeight(_ height: Float, within inset: Double) -> Float {
        height.atMost(heightWithin(Float(inset)))
    }

    /// `height` within the heights a client may choose.
    static func heightWithin(_ height: Float) -> Float {
        height > 0 ? height.atMost(RevealSettings.allowedCollapsibleHeights.upperBound) : 0
    }

    /// How far the chrome is moved up, from `-collapsibleHeight` (hidden)
    /// to 0 (shown), as Compose's `TopAppBarState.heightOffset`.
    public var heightOffset: Float {
        switch behavior {
        case .revealAtTop: isRevealed ? 0 : -collapsibleHeight
        case .pinned: 0
        case .enterAlways, .exitUntilCollapsed: trackedHeightOffset
        }
    }

    /// 0 shown … 1 hidden, in steps of 1/100, so one gesture makes at most
    /// a hundred or so versions rather than one per report.
    public var collapsedFraction: Double {
        Double(collapsedPercent) / 100
    }

    /// Whether the session was left with the behaviour every session had
    /// before there were others: its answers then read as they always did.
    public var hasDefaultBehavior: Bool {
        behavior == .revealAtTop && !snap && chosenCollapsibleHeight == nil
    }

    /// `collapsedFraction` in hundredths. A chrome that cannot collapse is shown.
    var collapsedPercent: Int {
        switch behavior {
        case .revealAtTop: return isRevealed ? 0 : 100
        case .pinned: return 0
        case .enterAlways, .exitUntilCollapsed:
            let height = collapsibleHeight
            guard height > 0 else { return 0 }
            let hidden = Double(-trackedHeightOffset) / Double(height)
            // A stored state may hold an offset past its height (a state file
            // or a hash written for another inset, or by hand): it stands at
            // the nearer end, and no ratio is too large to count.
            guard hidden < 1 else { return 100 }
            guard hidden > 0 else { return 0 }
            // Rounded half up by floor, which the function library computes alike.
            return Int((hidden * 100 + 0.5).rounded(.down))
        }
    }

    /// Sets both values, bumping `version` only if either really changed.
    ///
    /// A session at the last allowed version takes no more changes. Wrapping
    /// or saturating would give two states one version, and a client holding
    /// that ETag would pass `If-Match` over a change it never saw; a version
    /// past the bound would be rounded by clients and refused by the state
    /// file at the next start.
    mutating func set(inset newInset: Double? = nil, isRevealed newRevealed: Bool? = nil) {
        let inset = newInset ?? self.inset
        let revealed = newRevealed ?? self.isRevealed
        guard inset != self.inset || revealed != self.isRevealed else { return }
        guard version < Self.allowedVersions.upperBound else { return }
        self.inset = inset
        self.isRevealed = revealed
        version += 1
    }

    /// Takes the changes made to a copy of `previous` as one: a new version
    /// if a watcher would see a difference, none if not, and the previous
    /// state back at the last allowed version (see `set`). The seq stays:
    /// a report stays applied even where it changed nothing.
    mutating func commit(from previous: ChromeState) {
        guard !looksLike(previous) else {
            version = previous.version
            return
        }
        guard previous.version < Self.allowedVersions.upperBound else {
            let seq = lastAppliedSeq
            self = previous
            lastAppliedSeq = seq
            return
        }
        version = previous.version + 1
    }

    /// Whether a watcher sees the two alike: `heightOffset` moves within a
    /// step of the fraction without a new version.
    func looksLike(_ other: ChromeState) -> Bool {
        inset == other.inset && isRevealed == other.isRevealed && behavior == other.behavior && snap == other.snap
            && collapsibleHeight == other.collapsibleHeight && collapsedPercent == other.collapsedPercent
    }
}
