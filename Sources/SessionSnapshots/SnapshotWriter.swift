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
    /// Test hooks, to hold a snapshot at a chosen point while another runs.
    let pauses: Pauses

    struct Pauses: Sendable {
        /// With the sessions collected, before waiting to write.
        var afterCollecting: (@Sendable (_ generation: UInt64) -> Void)?
        /// Inside the write, with the temp file open (see ``SnapshotFile``).
        var whileWriting: (@Sendable () -> Void)?
    }

    /// - Parameter collect: the sessions as they are now, e.g. `store.snapshot()`.
    public convenience init(file: SnapshotFile, collect: @escaping @Sendable () -> [Session]) {
        self.init(file: file, collect: collect, pauses: Pauses())
    }

    init(file: SnapshotFile, collect: @escaping @Sendable () -> [Session], pauses: Pauses) {
        var file = file
        file.pauseWhileWriting = pauses.whileWriting
        self.file = file
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
        let (generation, sessions) = collecting.withLock {
            collected += 1
            return (collected, collect())
        }
        pauses.afterCollecting?(generation)
        return try writing.withLock { () throws(SnapshotFile.Failure) -> Bool in
            guard !isFinished else { return false }
            if isLast { isFinished = true }
            guard generation > written else { return false }
            try file.write(sessions)
            written = generation
            return true
        }
    }
}
