import Locking
import TopChromeCore

/// Running counts of what the rules did across all sessions, for operators:
/// how many reports counted, how many were ignored and why, how often the
/// island flipped.
public final class ChromeStatistics: Sendable {
    private enum Count: Int, CaseIterable {
        case applied, horizontal, stale, flips
    }

    /// Added to under the session's shard lock, from every thread at once.
    private let counters = StripedCounters(count: Count.allCases.count)

    public init() {}

    public var reportsApplied: Int { counters.value(at: Count.applied.rawValue) }
    public var reportsIgnoredHorizontal: Int { counters.value(at: Count.horizontal.rawValue) }
    public var reportsIgnoredStale: Int { counters.value(at: Count.stale.rawValue) }
    /// Changes of `isRevealed`, either way.
    public var revealFlips: Int { counters.value(at: Count.flips.rawValue) }

    public func record(_ outcome: ReportOutcome?, flipped: Bool) {
        switch outcome {
        case .applied: counters.add(1, at: Count.applied.rawValue)
        case .horizontal: counters.add(1, at: Count.horizontal.rawValue)
        case .stale: counters.add(1, at: Count.stale.rawValue)
        case nil: break
        }
        if flipped { counters.add(1, at: Count.flips.rawValue) }
    }
}
