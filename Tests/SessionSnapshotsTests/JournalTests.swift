import Foundation
import MemorySessionStore
@testable import SessionSnapshots
import StrictJSON
import Testing
import TopChromeCore

/// The journal beside the state file: what a flush writes, what a start
/// reads back, and what it does with damage.
@Suite struct JournalTests {
    let folder: URL
    let file: SnapshotFile
    var files: JournalFiles { JournalFiles(snapshot: file) }
    static let tag = StateTag(bits: 0xbeef)

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("journal-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        file = SnapshotFile(path: folder.appendingPathComponent("state.jsonl").path)
    }

    func journaled(_ store: InMemorySessionStore, _ policy: FsyncPolicy = .everysec) -> (JournalWriter, SnapshotWriter) {
        let journal = JournalWriter(files: files, policy: policy, take: store.takeChanges(into:))
        return (journal, SnapshotWriter(file: file, journal: journal, collect: store.snapshot))
    }

    func recovered() throws -> [SessionID: ChromeState] {
        Dictionary(uniqueKeysWithValues: try StateFileRecovery.read(file, taggedWith: Self.tag).sessions.map { ($0.id, $0.state) })
    }

    func held(_ store: InMemorySessionStore) -> [SessionID: ChromeState] {
        Dictionary(uniqueKeysWithValues: store.snapshot().map { ($0.id, $0.state) })
    }

    /// A flush writes each changed session once, with its latest state:
    /// a hundred reports to one session are one record.
    @Test func aFlushWritesEachChangedSessionOnce() throws {
        let store = InMemorySessionStore(idleTimeout: nil, journaled: true)
        let id = try store.create(inset: 40).id
        for seq in 1...100 { _ = store.apply([.scroll(ScrollReport(contentOffsetY: Double(seq * 7 % 300), seq: UInt64(seq)))], to: id) }
        let changes = store.takeChanges()
        #expect(changes.count == 1)
        #expect(changes.first?.state == store.session(id)?.state)
        #expect(store.takeChanges().isEmpty, "taken once")
        _ = store.session(id)
        #expect(store.takeChanges().isEmpty, "a read changes nothing")
    }

    /// Without a journal the store lists nothing.
    @Test func anUnjournaledStoreListsNothing() throws {
        let store = InMemorySessionStore(idleTimeout: nil)
        _ = try store.create(inset: 0)
        #expect(store.takeChanges().isEmpty)
    }

    @Test func aStartReadsTheSnapshotThenTheJournal() throws {
        let store = InMemorySessionStore(idleTimeout: nil, journaled: true)
        let (journal, snapshots) = journaled(store)
        try journal.open(number: 0)
        let kept = try store.create(inset: 10).id, deleted = try store.create(inset: 20).id
        try snapshots.save()
        _ = store.apply([.scroll(ScrollReport(contentOffsetY: 300, seq: 4))], to: kept)
        _ = store.remove(deleted)
        let added = try store.create(inset: 30).id
        #expect(journal.flush())
        let recovery = try StateFileRecovery.read(file, taggedWith: Self.tag)
        #expect(recovery.fromSnapshot == 2 && recovery.fromJournal == 2 && recovery.removedByJournal == 1)
        #expect(recovery.stoppedCleanly == false)
        #expect(try recovered() == held(store))
        #expect(try recovered()[added] != nil && recovered()[deleted] == nil)
    }

    /// Expiry is a removal like a delete: an older snapshot plus the
    /// journal must not bring the session back.
    @Test func anExpiredSessionStaysGone() throws {
        final class Clock: @unchecked Sendable {
            let lock = NSLock()
            var now = Duration.zero
        }
        let clock = Clock()
        let store = InMemorySessionStore(idleTimeout: .seconds(10), now: { clock.lock.withLock { clock.now } }, journaled: true)
        let (journal, snapshots) = journaled(store)
        try journal.open(number: 0)
        let id = try store.create(inset: 0).id
        try snapshots.save()
        clock.lock.withLock { clock.now = .seconds(60) }
        #expect(store.removeExpired() == 1)
        journal.flush()
        #expect(try recovered()[id] == nil)
    }

    /// The snapshot names the journal begun before its collection; older
    /// journals are removed once it is written, and a crash before that
    /// reads the old snapshot and both journals.
    @Test func aSnapshotStartsANewJournal() throws {
        let store = InMemorySessionStore(idleTimeout: nil, journaled: true)
        let (journal, _) = journaled(store)
        try journal.open(number: 0)
        let first = try store.create(inset: 1).id
        journal.flush()
        let number = journal.beginSnapshot()
        #expect(number == 1 && files.numbers() == [0, 1])
        _ = store.apply([.setInset(2)], to: first)
        journal.flush()
        #expect(try recovered() == held(store), "no snapshot yet: both journals")
        try file.write(store.snapshot(), journal: number)
        journal.snapshotSaved(journal: number)
        #expect(files.numbers() == [1])
        #expect(try file.readContents(taggedWith: Self.tag).journal == 1)
        #expect(try recovered() == held(store))
        journal.closeCleanly()
        #expect(files.numbers().isEmpty)
        _ = journal.beginSnapshot()
        #expect(files.numbers().isEmpty, "a snapshot still running after the stop begins no journal")
        #expect(try StateFileRecovery.read(file, taggedWith: Self.tag).stoppedCleanly == true)
    }

    /// Journals older than the snapshot are in it: not read again.
    @Test func journalsBeforeTheSnapshotAreNotRead() throws {
        let store = InMemorySessionStore(idleTimeout: nil, journaled: true)
        let (journal, _) = journaled(store)
        try journal.open(number: 3)
        _ = try store.create(inset: 1)
        journal.flush()
        try file.write([], journal: 4)
        let recovery = try StateFileRecovery.read(file, taggedWith: Self.tag)
        #expect(recovery.sessions.isEmpty && recovery.staleJournals == [3] && recovery.nextJournal == 4)
    }

    /// A last record cut short is dropped and named; the rest is read.
    @Test func aTornLastRecordIsDropped() throws {
        let store = InMemorySessionStore(idleTimeout: nil, journaled: true)
        let (journal, _) = journaled(store)
        try journal.open(number: 0)
        let id = try store.create(inset: 5).id
        journal.flush()
        let path = files.path(0)
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(#"{"id":"0000000000000000000000000000000a","inset":1"#.utf8))
        try handle.close()
        let recovery = try StateFileRecovery.read(file, taggedWith: Self.tag)
        #expect(recovery.dropped == [.init(path: path, line: 3, byte: before.count, length: 50)])
        #expect(recovery.sessions.map(\.id) == [id])
    }

    /// Damage before the last record stops the start, naming the line and byte.
    @Test func damageBeforeTheLastRecordIsRefused() throws {
        let store = InMemorySessionStore(idleTimeout: nil, journaled: true)
        let (journal, _) = journaled(store)
        try journal.open(number: 0)
        _ = try store.create(inset: 5)
        journal.flush()
        var text = try String(contentsOfFile: files.path(0), encoding: .utf8)
        let lines = text.split(separator: "\n")
        let bad = #"{"id":"0000000000000000000000000000000a","removed":false}"#
        text = String(lines[0]) + "\n" + bad + "\n" + String(lines[1]) + "\n"
        try text.write(toFile: files.path(0), atomically: true, encoding: .utf8)
        #expect(throws: SnapshotFile.Failure.corrupt(path: files.path(0), line: 2, byte: lines[0].utf8.count + 1,
                                                     reason: "a removal holds only an id and \"removed\":true")) {
            try StateFileRecovery.read(file, taggedWith: Self.tag)
        }
    }

    /// An editor's blank lines at the end of the snapshot are let be;
    /// the count is of sessions (it once said the file held 65 of 63).
    @Test func trailingBlankLinesAreLetBe() throws {
        let sessions = (0..<3).map { Session(id: .random(), state: ChromeState(inset: Double($0)), tag: Self.tag) }
        try file.write(sessions)
        let text = try String(contentsOfFile: file.path, encoding: .utf8)
        try (text + "\n\n").write(toFile: file.path, atomically: true, encoding: .utf8)
        #expect(try file.read(taggedWith: Self.tag) == sessions)
        let cut = text.split(separator: "\n").dropLast().joined(separator: "\n") + "\n\n\n"
        try cut.write(toFile: file.path, atomically: true, encoding: .utf8)
        #expect(throws: SnapshotFile.Failure.corrupt(path: file.path, line: 1, byte: 0, reason: "the header counts 3 sessions, the file holds 2")) {
            try file.read(taggedWith: Self.tag)
        }
    }

    /// With `always`, a change is in the journal, synced, before the store
    /// answers it: the barrier flushes on the changing thread.
    @Test func alwaysSyncsBeforeTheAnswer() throws {
        let barrier = ChangeBarrier()
        let store = InMemorySessionStore(idleTimeout: nil, journaled: true, barrier: barrier)
        let (journal, _) = journaled(store, .always)
        barrier.set { [weak journal] in journal?.flush() }
        try journal.open(number: 0)
        let id = try store.create(inset: 5).id
        #expect(try recovered()[id] != nil)
        _ = store.apply([.setInset(9)], to: id)
        #expect(try recovered()[id]?.inset == 9)
        _ = store.remove(id)
        #expect(try recovered()[id] == nil)
        #expect(journal.health.syncs == 3)
    }

    /// The journal's own encoder writes what the snapshot's writer writes,
    /// so one reader reads both.
    @Test func recordsAreWrittenAsTheSnapshotWritesSessions() throws {
        var generator = SystemRandomNumberGenerator()
        let behaviors: [RevealBehavior] = [.revealAtTop, .pinned, .enterAlways, .exitUntilCollapsed]
        var mismatches: [String] = []
        for round in 0..<500 {
            let state = ChromeState(
                inset: [0, 59.5, 10_000, 1e-40, Double.random(in: 0...10_000, using: &generator)][round % 5],
                isRevealed: Bool.random(using: &generator),
                version: [1, 1 << 40, UInt64.random(in: 1...ChromeState.allowedVersions.upperBound, using: &generator)][round % 3],
                lastAppliedSeq: round % 4 == 0 ? nil : [0, 9_007_199_254_740_991, UInt64.random(in: 0...1 << 53, using: &generator)][round % 3],
                behavior: behaviors[round % 4], snap: round % 3 == 0,
                chosenCollapsibleHeight: round % 2 == 0 ? nil : Float.random(in: 0...500, using: &generator),
                trackedHeightOffset: round % 5 == 0 ? 0 : -Float.random(in: 0...500, using: &generator),
                lastOffset: round % 6 == 0 ? nil : [0, -12, 1234.5, Double.random(in: -1e6...1e6, using: &generator)][round % 4])
            let id = round == 0 ? SessionID(high: 0, low: 1) : SessionID.random()
            var expected = JSONWriter(capacity: 256)
            SnapshotFile.writeSession(id, state, to: &expected)
            expected.raw("\n")
            var buffer = JournalRecordBuffer()
            buffer.append(id, state)
            let bytes = Array(buffer.bytes)
            if bytes != expected.bytes {
                mismatches.append("\(String(decoding: bytes, as: UTF8.self)) vs \(String(decoding: expected.bytes, as: UTF8.self))")
            }
        }
        #expect(mismatches.isEmpty, "\(mismatches.prefix(3))")
        var removal = JournalRecordBuffer()
        let id = SessionID.random()
        removal.append(id, nil)
        #expect(String(decoding: removal.bytes, as: UTF8.self) == #"{"id":"\#(id)","removed":true}"# + "\n")
    }
}
