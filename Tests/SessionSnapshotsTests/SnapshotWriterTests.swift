import Foundation
import MemorySessionStore
@testable import SessionSnapshots
import Testing
import TopChromeCore

/// The periodic snapshots and the last one at stop, overlapping. Each test
/// holds one snapshot at a chosen point (a test hook) while another runs.
@Suite struct SnapshotWriterTests {
    let folder: URL
    let file: SnapshotFile
    let store = InMemorySessionStore(idleTimeout: nil)

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("writer-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        file = SnapshotFile(path: folder.appendingPathComponent("state.jsonl").path)
    }

    func ids(in file: SnapshotFile) throws -> Set<SessionID> {
        Set(try file.read(taggedWith: .random()).map(\.id))
    }

    func save(_ writer: SnapshotWriter, isLast: Bool = false) -> Outcome {
        let outcome = Outcome()
        Thread {
            outcome.set(Result { () throws(SnapshotFile.Failure) in isLast ? try writer.saveLast() : try writer.save() })
        }.start()
        return outcome
    }

    /// The stale case: a snapshot collected before some deletes must not
    /// replace one collected after them, whichever finishes last.
    @Test func anOlderSnapshotNeverReplacesANewerOne() throws {
        let ids = try (0..<10).map { _ in try store.create(inset: 0).id }
        let collected = DispatchSemaphore(value: 0), resume = DispatchSemaphore(value: 0)
        let writer = SnapshotWriter(file: file, collect: store.snapshot, pauses: .init(afterCollecting: { generation in
            if generation == 1 { collected.signal(); resume.wait() }
        }))
        let periodic = save(writer)
        collected.wait()
        for id in ids[5...] { #expect(store.remove(id)) }
        #expect(try writer.save(), "the newer snapshot is written")
        resume.signal()
        periodic.wait()
        #expect(periodic.value == .success(false), "the older one is dropped")
        #expect(try self.ids(in: file) == Set(ids[..<5]), "no deleted session came back")
    }

    /// A second snapshot, periodic or the last one at stop, waits for a
    /// write under way rather than running beside it, and then lands last.
    @Test(arguments: [false, true])
    func aSnapshotWaitsForOneBeingWritten(isLast: Bool) throws {
        let ids = try (0..<10).map { _ in try store.create(inset: 0).id }
        let writing = DispatchSemaphore(value: 0), resume = DispatchSemaphore(value: 0)
        let entered = Counter()
        let writer = SnapshotWriter(file: file, collect: store.snapshot, pauses: .init(whileWriting: {
            if entered.next() == 1 { writing.signal(); resume.wait() }
        }))
        let first = save(writer)
        writing.wait()
        for id in ids[5...] { #expect(store.remove(id)) }
        let second = save(writer, isLast: isLast)
        // Time for the second to write beside the first, which it must not.
        #expect(!second.arrives(within: 0.3), "the second snapshot waited for the first")
        #expect(entered.value == 1)
        resume.signal()
        first.wait()
        second.wait()
        #expect(first.value == .success(true))
        #expect(second.value == .success(true))
        #expect(try self.ids(in: file) == Set(ids[..<5]))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["state.jsonl"], "no temp file left")
    }

    /// Nothing lands after the last snapshot: a periodic one that fires late
    /// during a stop writes nothing.
    @Test func nothingIsWrittenAfterTheLastSnapshot() throws {
        let kept = try store.create(inset: 1).id
        let writer = SnapshotWriter(file: file, collect: store.snapshot)
        #expect(try writer.saveLast())
        _ = try store.create(inset: 2)
        #expect(try writer.save() == false)
        #expect(try writer.saveLast() == false)
        #expect(try ids(in: file) == [kept])
    }
}

final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0

    func next() -> Int { lock.withLock { count += 1; return count } }
    var value: Int { lock.withLock { count } }
}
