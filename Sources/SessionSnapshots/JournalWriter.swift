#if canImport(Glibc)
import Glibc
#endif
import Locking
import StrictJSON
import TopChromeCore

/// When the journal is made durable, in Redis's words (`appendfsync`).
public enum FsyncPolicy: String, Sendable, CaseIterable {
    /// Before a change is answered: a `kill -9` or power loss loses
    /// nothing acknowledged; every change waits for the disk.
    case always
    /// Written and synced every second: a crash loses at most the last second.
    case everysec
    /// Written every second, synced when the kernel pleases: a `kill -9`
    /// loses at most the last second, a power loss up to the kernel's delay.
    case no
}

/// Appends what changed to the current journal (see ``JournalFiles``).
///
/// Each flush takes the sessions changed since the last one, each once with
/// its latest state, so its cost follows the sessions changed, not the
/// requests. Records are written whole, one write per flush; a failed write
/// is cut back off the file and its records kept for the next flush, so a
/// journal never holds half a record before a whole one.
public final class JournalWriter: @unchecked Sendable {
    public let files: JournalFiles
    public let policy: FsyncPolicy
    private let take: @Sendable (inout [ChangedSession]) -> Void
    /// What the last flush took, its room kept for the next.
    private var taken: [ChangedSession] = []
    private let lock = PthreadLock()
    // Under `lock`:
    /// The open journal; nil before the start, after a clean stop, or
    /// after a failed write could not be cut back off it.
    private var descriptor: Int32?
    private var number: UInt64 = 0
    private var size = 0
    /// Bytes of older journals still kept (their snapshot is not yet written).
    private var olderBytes: [UInt64: Int] = [:]
    /// Records taken but not written (a write failed), by session: the latest wins.
    private var unwritten: [SessionID: ChromeState?] = [:]
    /// The flush's bytes, kept between flushes (unless large) so a steady load allocates nothing.
    private var buffer = JournalRecordBuffer()
    /// Records written but not yet synced.
    private var unsynced = 0
    /// Changes taken into each journal the last good snapshot does not
    /// cover (an overcount: some came before its collection).
    private var changesByJournal: [UInt64: Int] = [:]
    private var record = JournalRecord()
    /// Set by a clean stop.
    private var isClosed = false

    /// A session's state now, or nil if it is gone.
    public typealias ChangedSession = (id: SessionID, state: ChromeState?)

    /// - Parameter take: appends the changes since the last call, e.g. the store's `takeChanges(into:)`.
    public init(files: JournalFiles, policy: FsyncPolicy, take: @escaping @Sendable (inout [ChangedSession]) -> Void) {
        self.files = files
        self.policy = policy
        self.take = take
    }

    deinit {
        if let descriptor { close(descriptor) }
    }

    /// Begins journal `number` (a start, after reading the older ones).
    public func open(number: UInt64) throws(SnapshotFile.Failure) {
        try lock.withLock { () throws(SnapshotFile.Failure) in
            let fd = try create(number)
            if let descriptor { close(descriptor) }
            (descriptor, self.number, size) = (fd, number, JournalFiles.header(number).count)
        }
    }

    /// Writes what changed since the last flush, and syncs it unless the
    /// policy is `no`. Returns false if the changes could not be written.
    @discardableResult
    public func flush() -> Bool {
        lock.withLock { flushLocked() }
    }

    private func flushLocked() -> Bool {
        taken.removeAll(keepingCapacity: taken.capacity < 1 << 16)
        take(&taken)
        if !taken.isEmpty { changesByJournal[number, default: 0] += taken.count }
        if !taken.isEmpty || !unwritten.isEmpty {
            buffer.removeAll()
            for (id, state) in unwritten { buffer.append(id, state) }
            for change in taken { buffer.append(change.id, change.state) }
            let failure = append(buffer.bytes)
            buffer.removeAll()
            if let failure {
                // Kept, the latest state of each, for the next flush.
                for change in taken { unwritten[change.id] = change.state }
                record.failed(failure)
                return false
            }
            unsynced += unwritten.count + taken.count
            unwritten.removeAll()
            record.lastFailure = nil
        }
        // With `no`, written is as far as the journal goes.
        if policy == .no { unsynced = 0 }
        guard unsynced > 0 else { return true }
        let started = Self.now()
        guard let descriptor else {
            record.failed("no journal is open")
            return false
        }
        guard fsync(descriptor) == 0 else {
            record.failed("fsync: " + String(cString: strerror(errno)))
            return false
        }
        let ended = Self.now()
        record.synced(at: ended, taking: ended - started)
        unsynced = 0
        return true
    }

    /// Appends `bytes` whole, or cuts back what was written of them.
    private func append(_ bytes: ArraySlice<UInt8>) -> String? {
        guard let descriptor else { return "no journal is open" }
        var linked = stat()
        if fstat(descriptor, &linked) == 0, linked.st_nlink == 0 { return "the journal '\(files.path(number))' was removed" }
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else {
                let reason = String(cString: strerror(errno))
                if ftruncate(descriptor, off_t(size)) != 0 { close(descriptor); self.descriptor = nil }
                return "cannot write the journal '\(files.path(number))': \(reason)"
            }
            written += count
        }
        size += bytes.count
        return nil
    }

    /// Begins the next journal, just before a snapshot collects its
    /// sessions, and returns the number the snapshot names: changes from
    /// now on go to it. If it cannot be made, the current one goes on
    /// (its number is as good: it began before the collection).
    public func beginSnapshot() -> UInt64 {
        lock.withLock {
            // After a clean stop no journal may appear: a periodic snapshot
            // still running then would make the next start think it unclean.
            guard !isClosed, let fd = try? create(number + 1) else { return number }
            if let descriptor {
                if unsynced > 0, policy != .no { fsync(descriptor) }
                close(descriptor)
                olderBytes[number] = size
            }
            unsynced = 0
            number += 1
            (descriptor, size) = (fd, JournalFiles.header(number).count)
            // A journal that failed (its file removed, say) is whole again.
            record.lastFailure = nil
            return number
        }
    }

    /// A snapshot naming journal `number` is on disk: the journals before it are in it.
    public func snapshotSaved(journal number: UInt64) {
        lock.withLock {
            for old in files.numbers() where old < number { unlink(files.path(old)) }
            olderBytes = olderBytes.filter { $0.key >= number }
            changesByJournal = changesByJournal.filter { $0.key >= number }
            files.snapshot.syncFolder()
        }
    }

    /// After the last snapshot at a clean stop: no journal is left, which
    /// is how the next start knows the stop was clean.
    public func closeCleanly() {
        lock.withLock {
            isClosed = true
            if let descriptor { close(descriptor) }
            descriptor = nil
            for old in files.numbers() { unlink(files.path(old)) }
            files.snapshot.syncFolder()
            olderBytes = [:]
            size = 0
        }
    }

    /// Whether every change since the last good snapshot is on disk in a
    /// journal (after a flush): then a failing last snapshot loses nothing.
    public var holdsEveryChange: Bool {
        lock.withLock {
            let changed = changesByJournal.filter { $0.value > 0 }
            if changed.isEmpty { return true }
            var linked = stat()
            guard let descriptor, unwritten.isEmpty, unsynced == 0 || policy == .no,
                  fstat(descriptor, &linked) == 0, linked.st_nlink > 0 else { return false }
            return changed.keys.allSatisfy { access(files.path($0), F_OK) == 0 }
        }
    }

    public var health: JournalRecord {
        lock.withLock {
            var health = record
            health.bytes = size + olderBytes.values.reduce(0, +)
            health.unflushed = unwritten.count + unsynced
            return health
        }
    }

    /// A new journal file with its header, synced, and its name synced into the folder.
    private func create(_ number: UInt64) throws(SnapshotFile.Failure) -> Int32 {
        let path = files.path(number)
        let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .unwritable(path: path, reason: String(cString: strerror(errno))) }
        let header = JournalFiles.header(number)
        let written = header.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written == header.count, fsync(fd) == 0 else {
            let failure = SnapshotFile.Failure.unwritable(path: path, reason: String(cString: strerror(errno)))
            close(fd)
            unlink(path)
            throw failure
        }
        files.snapshot.syncFolder()
        return fd
    }

    static func now() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }
}

/// How the journal has gone, for `/metrics`.
public struct JournalRecord: Sendable, Equatable {
    /// When a sync last finished (Unix seconds), and how long it took.
    public var lastSync: Double?
    public var lastSyncDuration: Double = 0
    public var syncs = 0
    public var failures = 0
    public var lastFailure: String?
    /// Bytes in the journals on disk.
    public var bytes = 0
    /// Changes taken from the store but not yet on disk.
    public var unflushed = 0

    mutating func synced(at time: Double, taking duration: Double) {
        lastSync = time
        lastSyncDuration = duration
        syncs += 1
        lastFailure = nil
    }

    mutating func failed(_ reason: String) {
        failures += 1
        lastFailure = reason
    }
}
