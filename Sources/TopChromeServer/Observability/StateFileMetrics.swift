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
    /// Changes the store has listed that the journal has not yet taken.
    private let changesNotTaken: @Sendable () -> Int

    init(writer: SnapshotWriter, changesNotTaken: @escaping @Sendable () -> Int) {
        self.writer = writer
        self.changesNotTaken = changesNotTaken
    }

    let name = "stateFile"

    /// What is wrong, while writes fail; nil while the last write succeeded.
    func problem() -> String? {
        let record = writer.health
        let journal = writer.journal?.health.lastFailure.map { "the journal cannot keep changes: \($0)" }
        guard let failure = record.lastFailure else { return journal }
        let since = record.lastSaved.map { "; it last held every session at \(Self.timestamp($0))" } ?? ""
        return "\(failure) (\(record.failuresInARow) failed in a row\(since))" + (journal.map { "; " + $0 } ?? "")
    }

    func render() -> String {
        let record = writer.health
        var text = MetricsText()
        text.family("topchrome_state_file_last_saved_timestamp_seconds", .gauge, help: "When the state file last held every session (Unix time): a snapshot, or the start that read it.")
        text.sample("topchrome_state_file_last_saved_timestamp_seconds", record.lastSaved ?? 0)
        text.family("topchrome_state_file_writes_total", .counter, help: "Snapshots written to the state file, by result.")
        text.sample("topchrome_state_file_writes_total", ["result": "saved"], record.saves)
        text.sample("topchrome_state_file_writes_total", ["result": "failed"], record.failures)
        text.family("topchrome_state_file_failures_in_a_row", .gauge, help: "Snapshots that failed since the last good one; sessions changed since then are lost if the service stops now.")
        text.sample("topchrome_state_file_failures_in_a_row", record.failuresInARow)
        guard let journal = writer.journal?.health else { return text.text }
        text.family("topchrome_state_file_changes_not_on_disk", .gauge, help: "Sessions changed (or removed) whose change is not yet synced to the journal: what a crash now would lose.")
        text.sample("topchrome_state_file_changes_not_on_disk", changesNotTaken() + journal.unflushed)
        text.family("topchrome_state_file_journal_last_fsync_timestamp_seconds", .gauge, help: "When the journal was last synced to disk (Unix time); 0 if never.")
        text.sample("topchrome_state_file_journal_last_fsync_timestamp_seconds", journal.lastSync ?? 0)
        text.family("topchrome_state_file_journal_last_fsync_duration_seconds", .gauge, help: "How long the journal's last sync to disk took.")
        text.sample("topchrome_state_file_journal_last_fsync_duration_seconds", journal.lastSyncDuration)
        text.family("topchrome_state_file_journal_bytes", .gauge, help: "Bytes in the journals beside the state file; a snapshot starts a new one.")
        text.sample("topchrome_state_file_journal_bytes", journal.bytes)
        text.family("topchrome_state_file_journal_write_failures_total", .counter, help: "Journal writes or syncs that failed; changes wait for the next flush.")
        text.sample("topchrome_state_file_journal_write_failures_total", journal.failures)
        return text.text
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
