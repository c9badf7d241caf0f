import MicroHTTPD
import TopChromeAPI

/// The server's connections in `/metrics`: how many are open, how many
/// were refused and why, and the descriptor limit they are budgeted from.
/// Refusals are otherwise invisible: the client is closed or answered by
/// the server before any request reaches the API or its access log.
struct ConnectionMetrics: MetricsFamilies {
    let counts: ConnectionCounts
    let budget: DescriptorBudget

    func render() -> String {
        var text = MetricsText()
        text.family("topchrome_connections_open", .gauge, help: "Connections open now.")
        text.sample("topchrome_connections_open", counts.openConnections)
        text.family("topchrome_connections_refused_total", .counter,
                    help: "Connections and requests turned away before the API saw them, by reason.")
        for (reason, count) in zip(ConnectionRefusal.allCases, counts.allRefusals) {
            text.sample("topchrome_connections_refused_total", ["reason": reason.label], count)
        }
        text.family("topchrome_connections_budget", .gauge,
                    help: "Connections the descriptor limit allows after the process's reserve.")
        text.sample("topchrome_connections_budget", budget.connections)
        text.family("process_max_fds", .gauge, help: "Maximum number of open file descriptors.")
        text.sample("process_max_fds", budget.limit)
        return text.text
    }
}

/// A warn line at most once a minute while refusals go on, with the counts
/// since the last line: enough to see an attack or an undersized server in
/// the log without a line per refused client.
final class RefusalLog: @unchecked Sendable {
    private let counts: ConnectionCounts
    private let logger: Logger
    private var lastCounts: [Int]
    private var lastLine: ContinuousClock.Instant?
    static let spacing: Duration = .seconds(60)

    init(counts: ConnectionCounts, logger: Logger) {
        self.counts = counts
        self.logger = logger
        lastCounts = counts.allRefusals
    }

    /// Called by one periodic chore (never concurrently).
    func check(now: ContinuousClock.Instant = .now) {
        if let lastLine, now - lastLine < Self.spacing { return }
        let current = counts.allRefusals
        let new = zip(current, lastCounts).map { $0 - $1 }
        guard new.contains(where: { $0 > 0 }) else { return }
        lastCounts = current
        lastLine = now
        let parts = zip(ConnectionRefusal.allCases, new).filter { $0.1 > 0 }.map { "\($0.0.label)=\($0.1)" }
        logger.log(.warn, "connections refused: " + parts.joined(separator: " ")
                   + " (at most one such line a minute; topchrome_connections_refused_total counts them)")
    }
}
