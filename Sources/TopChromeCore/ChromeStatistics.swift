import Synchronization

/// Running counts of what the rules did across all sessions, for operators:
/// how many reports counted, how many were ignored and why, how often the
/// island flipped.
public final class ChromeStatistics: Sendable {
    private let applied = Atomic<Int>(0)
    private let horizontal = Atomic<Int>(0)
    private let stale = Atomic<Int>(0)
    private let flips = Atomic<Int>(0)

    public init() {}

    public var reportsApplied: Int { applied.load(ordering: .relaxed) }
    public var reportsIgnoredHorizontal: Int { horizontal.load(ordering: .relaxed) }
    public var reportsIgnoredStale: Int { stale.load(ordering: .relaxed) }
    /// Changes of `isRevealed`, either way.
    public var revealFlips: Int { flips.load(ordering: .relaxed) }

    func record(_ outcome: ReportOutcome?, flipped: Bool) {
        switch outcome {
        case .applied: applied.add(1, ordering: .relaxed)
        case .horizontal: horizontal.add(1, ordering: .relaxed)
        case .stale: stale.add(1, ordering: .relaxed)
        case nil: break
        }
        if flipped { flips.add(1, ordering: .relaxed) }
    }
}
