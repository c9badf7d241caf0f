#if canImport(Glibc)
import Glibc
#endif
import TopChromeCore

/// What a start finds in a state file and its journals: the sessions as
/// the last flush left them, and what an operator wants to know of it —
/// whether the last stop was clean, how old the snapshot is, what came
/// from the journals, and what was dropped.
public struct StateFileRecovery: Sendable {
    public var sessions: [Session]
    /// Whether the last stop was clean: it leaves a snapshot and no
    /// journal. Nil on a first start (neither is there).
    public var stoppedCleanly: Bool?
    /// Seconds since the snapshot was written; nil without one.
    public var snapshotAge: Double?
    /// Sessions in the snapshot.
    public var fromSnapshot = 0
    /// Sessions whose state came from a journal (new or changed since the snapshot).
    public var fromJournal = 0
    /// Sessions of the snapshot that a journal removed (deleted or expired).
    public var removedByJournal = 0
    /// Journals read, in order.
    public var journals: [UInt64] = []
    /// Journals older than the snapshot: already in it.
    public var staleJournals: [UInt64] = []
    /// Torn last records, dropped.
    public var dropped: [JournalFiles.TornRecord] = []
    /// The journal number a start goes on from.
    public var nextJournal: UInt64 = 0

    /// Reads the snapshot, then every journal from its number on, in order.
    public static func read(_ file: SnapshotFile, taggedWith tag: StateTag) throws(SnapshotFile.Failure) -> StateFileRecovery {
        let contents = try file.readContents(taggedWith: tag)
        let journals = JournalFiles(snapshot: file)
        let numbers = journals.numbers()
        var recovery = StateFileRecovery(sessions: contents.sessions)
        recovery.fromSnapshot = contents.sessions.count
        recovery.journals = numbers.filter { $0 >= contents.journal }
        recovery.staleJournals = numbers.filter { $0 < contents.journal }
        recovery.stoppedCleanly = !contents.exists && numbers.isEmpty ? nil : contents.exists && recovery.journals.isEmpty
        recovery.nextJournal = numbers.last.map { max(contents.journal, $0 + 1) } ?? contents.journal
        if contents.exists {
            var status = stat()
            if stat(file.path, &status) == 0 {
                var now = timespec()
                clock_gettime(CLOCK_REALTIME, &now)
                recovery.snapshotAge = max(0, Double(now.tv_sec - status.st_mtim.tv_sec)
                    + Double(now.tv_nsec - status.st_mtim.tv_nsec) / 1e9)
            }
        }
        guard !recovery.journals.isEmpty else { return recovery }

        var states: [SessionID: ChromeState] = [:]
        states.reserveCapacity(contents.sessions.count)
        for session in contents.sessions { states[session.id] = session.state }
        var touched = Set<SessionID>()
        for number in recovery.journals {
            let reading = try journals.read(number, taggedWith: tag)
            if let torn = reading.torn { recovery.dropped.append(torn) }
            for record in reading.records {
                states[record.id] = record.state
                touched.insert(record.id)
            }
        }
        let before = Set(contents.sessions.map(\.id))
        recovery.removedByJournal = before.filter { states[$0] == nil }.count
        recovery.fromJournal = touched.filter { states[$0] != nil }.count
        recovery.sessions = states.map { Session(id: $0.key, state: $0.value, tag: tag) }
        return recovery
    }
}
