#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import MemorySessionStore
import SessionSnapshots
import SessionWatching
import TopChromeAPI
import TopChromeCore

/// Sessions in this process (`--store memory`): the sharded store, and the
/// state file with its journal when `--state-file` keeps them across restarts.
public final class MemoryBackend: Sendable {
    public let store: InMemorySessionStore
    private let snapshots: SnapshotWriter?
    private let stateFileMetrics: StateFileMetrics?
    private let earlySnapshot = OneAtATime()
    private let logger: Logger

    init(_ configuration: ServiceConfiguration, rules: ChromeRules, idleTimeout: Duration?,
         subscriptions: SessionSubscriptions, logger: Logger) {
        self.logger = logger
        let barrier = configuration.stateFile.path != nil && configuration.stateFile.fsync == .always ? ChangeBarrier() : nil
        let store = InMemorySessionStore(rules: rules, capacity: configuration.limits.maxSessions, idleTimeout: idleTimeout,
                                         subscriptions: subscriptions, journaled: configuration.stateFile.path != nil,
                                         barrier: barrier)
        self.store = store
        let snapshots = configuration.stateFile.path.map { path in
            let file = SnapshotFile(path: path)
            let journal = JournalWriter(files: JournalFiles(snapshot: file), policy: configuration.stateFile.fsync,
                                        take: store.takeChanges(into:))
            barrier?.set { [weak journal] in journal?.flush() }
            return SnapshotWriter(file: file, journal: journal, collect: store.snapshot)
        }
        self.snapshots = snapshots
        stateFileMetrics = snapshots.map { StateFileMetrics(writer: $0, changesNotTaken: { store.changesNotTaken }) }
    }

    var metrics: [any MetricsFamilies] { stateFileMetrics.map { [$0] } ?? [] }
    var readinessDetails: [any ReadinessDetail] { stateFileMetrics.map { [$0] } ?? [] }

    /// Reads the state file back (if any) and starts the periodic work:
    /// snapshots, journal flushes, and the sweep of expired sessions.
    func start(_ configuration: ServiceConfiguration, chores: Chores) throws(StartupError) -> TopChromeService.StartOutcome {
        var outcome = TopChromeService.StartOutcome()
        if let snapshots, let journal = snapshots.journal {
            let recovery = try Self.readStateFile(snapshots.file, maxSessions: configuration.limits.maxSessions, taggedWith: store.epoch)
            do {
                try store.restore(recovery.sessions)
            } catch {
                throw .stateFile(.tooManySessions(path: snapshots.file.path, count: recovery.sessions.count, limit: store.capacity))
            }
            outcome.recovery = recovery
            outcome.leftoversRemoved = snapshots.file.removeLeftovers()
            do {
                try journal.open(number: recovery.nextJournal)
            } catch {
                throw .stateFile(error)
            }
            if recovery.journals.isEmpty && recovery.staleJournals.isEmpty {
                snapshots.markCurrent()
            } else {
                // The journals read go into a snapshot now, so none is read twice.
                outcome.foldFailure = save(isLast: false)
            }
            chores.every(.seconds(configuration.stateFile.snapshotInterval)) { [self] in save(isLast: false) }
            // Also under `always`: removals found by expiry are journalled here.
            chores.every(.seconds(1), qos: .userInitiated) { [self] in
                journal.flush()
                let limit = Self.journalLimit(snapshot: snapshots.file, minimum: configuration.stateFile.journalSnapshotBytes)
                if journal.health.bytes > limit { snapshotSoon() }
            }
        }
        if let ttl = store.idleTimeout {
            // Expired sessions also vanish when touched; the sweep frees the
            // ones no client will ever touch again.
            let interval = min(ttl / 4, .seconds(60))
            chores.every(interval) { [store] in store.removeExpired() }
        }
        return outcome
    }

    /// After the server stopped, so every change a client was told of is
    /// in it: the last snapshot. A periodic one still running is waited
    /// for, and none can land after this one.
    func stop() -> (lost: SnapshotFile.Failure?, notLost: SnapshotFile.Failure?) {
        snapshots?.journal?.flush()
        let failure = save(isLast: true)
        if failure == nil { snapshots?.journal?.closeCleanly() }
        let lost = failure != nil && snapshots?.journal?.holdsEveryChange != true
        return lost ? (failure, nil) : (nil, failure)
    }

    /// The state file's sessions, checked as a start needs them: readable,
    /// well formed (journals too, bar a torn last record), no more than
    /// `--max-sessions`, and in a folder that takes the snapshots (else
    /// every session would be lost at the stop). `check-config` asks the
    /// same without starting.
    static func readStateFile(_ file: SnapshotFile, maxSessions: Int,
                              taggedWith epoch: StateTag = .random()) throws(StartupError) -> StateFileRecovery {
        let recovery: StateFileRecovery
        do {
            recovery = try StateFileRecovery.read(file, taggedWith: epoch)
            try file.checkWritable()
        } catch {
            throw .stateFile(error)
        }
        guard recovery.sessions.count <= maxSessions else {
            throw .stateFile(.tooManySessions(path: file.path, count: recovery.sessions.count, limit: maxSessions))
        }
        return recovery
    }

    /// A journal past this starts a snapshot before its interval, as Redis
    /// rewrites an AOF that doubled: twice the snapshot, and at least `minimum`.
    /// A long journal costs disk and start time, not requests.
    static func journalLimit(snapshot file: SnapshotFile, minimum: Int) -> Int {
        var status = stat()
        let size = stat(file.path, &status) == 0 ? Int(status.st_size) : 0
        return max(minimum, 2 * size)
    }

    /// A snapshot on a queue of its own, unless one started so is still running.
    private func snapshotSoon() {
        guard earlySnapshot.begin() else { return }
        DispatchQueue.global(qos: .utility).async { [self] in
            save(isLast: false)
            earlySnapshot.end()
        }
    }

    /// Writes the state file now. A failure is reported and the service goes
    /// on: the previous snapshot stays in place, and the next try may succeed.
    @discardableResult
    func save(isLast: Bool) -> SnapshotFile.Failure? {
        guard let snapshots else { return nil }
        let failedBefore = snapshots.health.failuresInARow
        do {
            let saved = isLast ? try snapshots.saveLast() : try snapshots.save()
            if saved, failedBefore > 0 {
                logger.log(.info, "snapshot saved again", ["failed_in_a_row": .int(failedBefore)], always: true)
            }
            return nil
        } catch {
            // At the stop, whether anything is lost is the caller's to say:
            // the journal may hold every change.
            logger.log(isLast ? .warn : .error, isLast ? "last snapshot failed" : "snapshot failed",
                       ["error": .string("\(error)")], always: true)
            return error
        }
    }
}
