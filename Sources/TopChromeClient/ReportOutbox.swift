import TopChromeCore

/// What a `RemoteTopChrome` has to tell its session, in the order the view
/// made it, and the prediction of what the session will answer. Every
/// report is handed on (the session batches them; `ScrollBatch` says why
/// all of them), consecutive disappearances as one.
@MainActor final class ReportOutbox {
    enum Change {
        /// `ticket`: the prediction's name for the report, nil if it was not predicted.
        case report(ScrollReport, ticket: UInt64?)
        case disappear
    }

    var session: ChromeSession
    var prediction = ChromePrediction()
    private var pending: [Change] = []
    /// Wakes the task that drains `pending`; one wake-up is as good as many.
    private nonisolated let wake: AsyncStream<Void>.Continuation
    /// One drain at a time, or two could hand changes over out of order.
    private let drains = OneAtATime()

    init(session: ChromeSession) {
        self.session = session
        let (wakes, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        self.wake = wake
        Task { [self] in
            for await _ in wakes { await drain() }
        }
    }

    func add(_ change: Change) {
        if case .disappear = change, case .disappear? = pending.last { return }
        pending.append(change)
        wake.yield()
    }

    /// Hands what is pending to the session, in order.
    func drain() async {
        await drains.begin()
        defer { drains.end() }
        while !pending.isEmpty {
            let change = pending.removeFirst()
            switch change {
            case let .report(report, ticket):
                let seq = await session.report(
                    contentOffsetY: report.contentOffsetY, contentInsetTop: report.contentInsetTop, phase: report.phase,
                    contentHeight: report.contentHeight, viewportHeight: report.viewportHeight)
                if let ticket, let seq { prediction.numbered(ticket, seq: seq) }
            case .disappear:
                await session.enqueue(.disappear)
            }
        }
    }

    nonisolated func close() {
        wake.finish()
    }
}
