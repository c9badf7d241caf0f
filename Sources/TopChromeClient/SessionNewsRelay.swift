import Observation

/// Hands a session's news to its `RemoteTopChrome`, and keeps the count of
/// lost reports whether it follows or not. It holds the object only while
/// it follows: a session, which the object holds, must not hold the object
/// the rest of the time, or neither would ever be freed.
@MainActor @Observable final class SessionNewsRelay {
    @ObservationIgnored var target: RemoteTopChrome?
    private(set) var lastReportError: TopChromeError?
    private(set) var reportsLost = 0
    /// The session whose news count; news of one left behind do not.
    @ObservationIgnored private var current: ObjectIdentifier
    @ObservationIgnored private var missed: TopChromeError?
    @ObservationIgnored private var missedLost: Set<UInt64> = []

    init(following session: ChromeSession) {
        current = ObjectIdentifier(session)
    }

    func follow(_ session: ChromeSession) {
        current = ObjectIdentifier(session)
        missed = nil
        missedLost = []
    }

    func tell(_ news: SessionNews, about session: ObjectIdentifier) {
        guard session == current else { return }
        switch news {
        case let .reportsLost(error, seqs, count):
            lastReportError = error
            reportsLost += count
            if let target { target.forget(Set(seqs)) } else { missedLost.formUnion(seqs) }
        case .reportsDelivered:
            if lastReportError != nil { lastReportError = nil }
        case let .failed(error):
            if let target { target.failed(error) } else { missed = error }
        }
    }

    /// A report refused before it was numbered (a value the service would refuse).
    func refused(_ error: TopChromeError) {
        lastReportError = error
        reportsLost += 1
    }

    /// The newest failure, and the reports lost, told while nobody followed.
    func takeMissed() -> (TopChromeError?, Set<UInt64>) {
        defer {
            missed = nil
            missedLost = []
        }
        return (missed, missedLost)
    }
}
