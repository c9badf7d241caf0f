#if canImport(Glibc)
import Glibc
#endif
import Locking
import TopChromeCore

/// The one writer of a state file: the periodic snapshots and the last one
/// at stop all go through it.
///
/// Snapshots are written one at a time, and a snapshot taken earlier never
/// replaces one taken later: each is numbered (its generation) in the order
/// the sessions were collected, and a write whose generation is not newer
/// than the file's is dropped. Otherwise a periodic snapshot still being
/// written when the service stops could land after the final one and bring
/// back sessions whose deletion clients were told of.
public final class SnapshotWriter: @unchecked Sendable {
    public let file: SnapshotFile
    /// Begun anew before each collection, so the snapshot can name the
    /// journal that holds every change after it.
    public let journal: JournalWriter?
    private let collect: @Sendable () -> [Session]
    /// Held while sessions are collected, so generations follow collection order.
    private let collecting = PthreadLock()
    /// Held while a snapshot is written and renamed into place.
    private let writing = PthreadLock()
    /// The latest generation collected (under `collecting`).
    private var collected: UInt64 = 0
    /// The generation the file holds (under `writing`); the file found at
    /// start is generation 0.
    private var written: UInt64 = 0
    /// Set by the last snapshot (under `writing`): nothing is written after it.
    private var isFinished = false
    /// How the writes went (under `writing`).
    private var record = SnapshotRecord()
    /// Test hooks, to hold a snapshot at a chosen point while another runs.
    let pauses: Pauses

    struct Pauses: Sendable {
        /// With the sessions collected, before waiting to write.
        var afterCollecting: (@Sendable (_ generation: UInt64) -> Void)?
        /// Inside the write, with the temp file open (see ``SnapshotFile``).
        var whileWriting: (@Sendable () -> Void)?
    }

    /// - Parameter collect: the sessions as they are now, e.g. `store.snapshot()`.
    public convenience init(file: SnapshotFile, journal: JournalWriter? = nil, collect: @escaping @Sendable () -> [Session]) {
        self.init(file: file, journal: journal, collect: collect, pauses: Pauses())
    }

    init(file: SnapshotFile, journal: JournalWriter? = nil, collect: @escaping @Sendable () -> [Session], pauses: Pauses) {
        var file = file
        file.pauseWhileWriting = pauses.whileWriting
        self.file = file
        self.journal = journal
        self.collect = collect
        self.pauses = pauses
    }

    /// Collects the sessions and writes them, waiting for a write under way.
    /// Returns false, writing nothing, if a newer snapshot got there first or
    /// the last one has been written.
    @discardableResult
    public func save() throws(SnapshotFile.Failure) -> Bool {
        try save(isLast: false)
    }

    /// The snapshot at stop: waits for a write under way, writes, and makes
    /// every later `save()` a no-op, so none can land after it.
    @discardableResult
    public func saveLast() throws(SnapshotFile.Failure) -> Bool {
        try save(isLast: true)
    }

    private func save(isLast: Bool) throws(SnapshotFile.Failure) -> Bool {
        let (generation, journalNumber, sessions) = collecting.withLock {
            collected += 1
            let journalNumber = journal?.beginSnapshot() ?? 0
            return (collected, journalNumber, collect())
        }
        pauses.afterCollecting?(generation)
        return try writing.withLock { () throws(SnapshotFile.Failure) -> Bool in
            guard !isFinished else { return false }
            if isLast { isFinished = true }
            guard generation > written else { return false }
            do throws(SnapshotFile.Failure) {
                try file.write(sessions, journal: journalNumber)
            } catch {
                record.failed(error)
                throw error
            }
            journal?.snapshotSaved(journal: journalNumber)
            record.saved(at: Self.wallClock())
            written = generation
            return true
        }
    }

    /// How snapshots have gone so far, for `/metrics` and `/readyz`.
    public var health: SnapshotRecord {
        writing.withLock { record }
    }

    /// Marks the file as holding every session now: at start, right after
    /// it was read into an empty store.
    public func markCurrent() {
        writing.withLock { record.lastSaved = Self.wallClock() }
    }

    /// Seconds since the Unix epoch: operators compare it with their own clocks.
    private static func wallClock() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }
}

/// The writes of a state file so far. A failing write leaves the last good
/// snapshot in place, so sessions are lost only if the service stops while
/// writes fail; an operator must hear of it before then.
public struct SnapshotRecord: Sendable, Equatable {
    /// When the file last held every session (Unix seconds); nil if never.
    public var lastSaved: Double?
    public var saves = 0
    public var failures = 0
    /// Failures since the last good write: 0 when all is well.
    public var failuresInARow = 0
    /// Why the last write failed, while failures go on.
    public var lastFailure: SnapshotFile.Failure?

    public init() {}

    mutating func saved(at time: Double) {
        lastSaved = time
        saves += 1
        failuresInARow = 0
        lastFailure = nil
    }

    mutating func failed(_ failure: SnapshotFile.Failure) {
        failures += 1
        failuresInARow += 1
        lastFailure = failure
    }
}
