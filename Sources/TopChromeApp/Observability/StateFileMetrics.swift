#if canImport(Glibc)
import Glibc
#endif
import SessionSnapshots
import TopChromeAPI

/// The state file as `/metrics` and `/readyz` show it. A failing snapshot
/// loses nothing yet (the last good one stays in place), but every session
/// changed since is lost if the service stops before a write succeeds:
/// an operator must see it while there is time to act.
final class StateFileMetrics: MetricsFamilies, ReadinessDetail {
    private let writer: SnapshotWriter

    init(writer: SnapshotWriter) {
        self.writer = writer
    }

    let name = "stateFile"

    /// What is wrong, while writes fail; nil while the last write succeeded.
    func problem() -> String? {
        let record = writer.health
        guard let failure = record.lastFailure else { return nil }
        let since = record.lastSaved.map { "; it last held every session at \(Self.timestamp($0))" } ?? ""
        return "\(failure) (\(record.failuresInARow) failed in a row\(since))"
    }

    func render() -> String {
        let record = writer.health
        var text = "# HELP topchrome_state_file_last_saved_timestamp_seconds When the state file last held every session (Unix time): a snapshot, or the start that read it.\n"
        text += "# TYPE topchrome_state_file_last_saved_timestamp_seconds gauge\n"
        text += "topchrome_state_file_last_saved_timestamp_seconds \(record.lastSaved ?? 0)\n"
        text += "# HELP topchrome_state_file_writes_total Snapshots written to the state file, by result.\n"
        text += "# TYPE topchrome_state_file_writes_total counter\n"
        text += "topchrome_state_file_writes_total{result=\"saved\"} \(record.saves)\n"
        text += "topchrome_state_file_writes_total{result=\"failed\"} \(record.failures)\n"
        text += "# HELP topchrome_state_file_failures_in_a_row Snapshots that failed since the last good one; sessions changed since then are lost if the service stops now.\n"
        text += "# TYPE topchrome_state_file_failures_in_a_row gauge\n"
        text += "topchrome_state_file_failures_in_a_row \(record.failuresInARow)\n"
        return text
    }

    /// RFC 3339 in UTC, as log lines write times.
    private static func timestamp(_ seconds: Double) -> String {
        var bytes = LogBytes(capacity: 32)
        var cache = TimestampCache()
        let whole = seconds.rounded(.down)
        cache.append(timespec(tv_sec: Int(whole), tv_nsec: Int((seconds - whole) * 1e9)), to: &bytes)
        return String(decoding: bytes.copied(), as: UTF8.self)
    }
}
