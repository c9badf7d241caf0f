/// The top chrome of one app session: the status bar plus the floating island.
///
/// The two values belong together and are read by parts of the app far apart:
/// the hero header pulls itself up by `inset`, the root view shows or hides the
/// island by `isRevealed`.
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
    /// Whether the island shows: at the top it does, scrolled down it hides.
    public internal(set) var isRevealed: Bool
    /// Grows by one on every change of `inset` or `isRevealed`, and only then,
    /// so a client can tell "nothing new" from "changed" by comparing versions.
    public internal(set) var version: UInt64
    /// Highest `seq` of a scroll report applied so far. Networks reorder, and
    /// an old "far down" arriving after a newer "at the top" must not hide the island.
    public internal(set) var lastAppliedSeq: UInt64?

    /// A new session's chrome: revealed, because every screen starts at the top.
    public init(inset: Double = 0) {
        self.init(inset: inset, isRevealed: true, version: 1, lastAppliedSeq: nil)
    }

    /// A state exactly as stored, e.g. read back from another store.
    public init(inset: Double, isRevealed: Bool, version: UInt64, lastAppliedSeq: UInt64?) {
        self.inset = inset
        self.isRevealed = isRevealed
        self.version = version
        self.lastAppliedSeq = lastAppliedSeq
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
}
