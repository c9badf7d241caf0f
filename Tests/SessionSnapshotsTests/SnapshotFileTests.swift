import Foundation
import MemorySessionStore
@testable import SessionSnapshots
import Testing
import TopChromeCore

@Suite struct SnapshotFileTests {
    let folder: URL
    let file: SnapshotFile

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("snapshots-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        file = SnapshotFile(path: folder.appendingPathComponent("state.jsonl").path)
    }

    /// The file keeps no tags; its reader gives this one.
    static let tag = StateTag(bits: 0xfeed)

    let sessions = [
        Session(id: .random(), state: ChromeState(), tag: Self.tag),
        Session(id: .random(), state: ChromeState(inset: 59.5, isRevealed: false, version: 7, lastAppliedSeq: 9_007_199_254_740_991), tag: Self.tag),
        Session(id: SessionID(high: 0, low: 1), state: ChromeState(inset: 10_000, isRevealed: true, version: 123_456, lastAppliedSeq: 0), tag: Self.tag),
    ]

    @Test func roundTrips() throws {
        try file.write(sessions)
        #expect(try file.read(taggedWith: Self.tag) == sessions)
        #expect(try folderContents() == ["state.jsonl"], "the temp file was renamed into place")
    }

    /// A session's behaviour survives a restart; a session without one is written as before.
    @Test func behavioursRoundTrip() throws {
        let behaving = [
            Session(id: .random(), state: ChromeState(inset: 80, isRevealed: false, version: 4, lastAppliedSeq: 3, behavior: .enterAlways,
                                                      snap: true, chosenCollapsibleHeight: 56.3, trackedHeightOffset: -56.3,
                                                      lastOffset: 1234.5), tag: Self.tag),
            Session(id: .random(), state: ChromeState(inset: 80, isRevealed: true, version: 2, lastAppliedSeq: nil, behavior: .pinned),
                    tag: Self.tag),
        ]
        try file.write(behaving + [sessions[0]])
        #expect(try file.read(taggedWith: Self.tag) == behaving + [sessions[0]])
        let text = try String(contentsOfFile: file.path, encoding: .utf8)
        #expect(text.contains(#""behavior":"enterAlways""#) && text.contains(#""collapsibleHeight":56.29999923706055"#))
        #expect(text.hasSuffix(#""inset":0,"isRevealed":true,"version":1}"# + "\n"), "no behaviour members for the default")
        let bad = "{\"format\":\"topchrome-sessions\",\"version\":1,\"count\":1}\n"
            + "{\"id\":\"00000000000000000000000000000001\",\"inset\":0,\"isRevealed\":true,\"version\":1,\"collapsibleHeight\":0.1}\n"
        try expectRefused(bad)
    }

    @Test func missingFileIsAFirstStart() throws {
        #expect(try file.read(taggedWith: Self.tag) == [])
    }

    @Test func replacesTheWholeFile() throws {
        try file.write(sessions)
        try file.write([sessions[1]])
        #expect(try file.read(taggedWith: Self.tag) == [sessions[1]])
        try file.write([])
        #expect(try file.read(taggedWith: Self.tag) == [])
    }

    @Test(arguments: [
        "", "not json\n", "{\"format\":\"other\",\"version\":1,\"count\":0}\n",
        "{\"format\":\"topchrome-sessions\",\"version\":2,\"count\":0}\n",
        "{\"format\":\"topchrome-sessions\",\"version\":1,\"count\":2}\n{\"id\":\"00000000000000000000000000000001\",\"inset\":0,\"isRevealed\":true,\"version\":1}\n",
        "{\"format\":\"topchrome-sessions\",\"version\":1,\"count\":1}\n{\"id\":\"XYZ\",\"inset\":0,\"isRevealed\":true,\"version\":1}\n",
        "{\"format\":\"topchrome-sessions\",\"version\":1,\"count\":1}\n{\"id\":\"00000000000000000000000000000001\",\"inset\":-5,\"isRevealed\":true,\"version\":1}\n",
        "{\"format\":\"topchrome-sessions\",\"version\":1,\"count\":1}\n{\"id\":\"00000000000000000000000000000001\",\"inset\":0,\"isRevealed\":true,\"version\":0}\n",
        "{\"format\":\"topchrome-sessions\",\"version\":1,\"count\":1}\n{\"id\":\"00000000000000000000000000000001\",\"inset\":0,\"isRevealed\":true,\"version\":18446744073709551615}\n",
        "{\"format\":\"topchrome-sessions\",\"version\":1,\"count\":1}\n{\"id\":\"00000000000000000000000000000001\",\"inset\":0,\"isRevealed\":true,\"version\":1,\"lastSeq\":-1}\n",
        "{\"format\":\"topchrome-sessions\",\"version\":1,\"count\":2}\n{\"id\":\"00000000000000000000000000000001\",\"inset\":0,\"isRevealed\":true,\"version\":1}\n{\"id\":\"00000000000000000000000000000001\",\"inset\":0,\"isRevealed\":true,\"version\":1}\n",
    ])
    func corruptFilesAreRefused(_ text: String) throws {
        try expectRefused(text)
    }

    /// A line whose id is all zeros is refused like any bad line, and named.
    @Test func theAllZeroIdIsRefused() throws {
        let text = "{\"format\":\"topchrome-sessions\",\"version\":1,\"count\":2}\n"
            + "{\"id\":\"00000000000000000000000000000001\",\"inset\":0,\"isRevealed\":true,\"version\":1}\n"
            + "{\"id\":\"00000000000000000000000000000000\",\"inset\":0,\"isRevealed\":true,\"version\":1}\n"
        try expectRefused(text, as: .corrupt(path: file.path, line: 3, byte: 54 + 82, reason: "no valid id"))
    }

    /// A session given twice is named as logs name ids, by its first 8 hex
    /// digits: the message goes to the log, which must not hand out the id.
    @Test func aDuplicateIdIsNamedShort() throws {
        let line = "{\"id\":\"3b6b1e62aaaabbbbccccddddeeeeffff\",\"inset\":0,\"isRevealed\":true,\"version\":1}\n"
        try expectRefused("{\"format\":\"topchrome-sessions\",\"version\":1,\"count\":2}\n" + line + line,
                          as: .corrupt(path: file.path, line: 3, byte: 54 + 82, reason: "session 3b6b1e62 appears twice"))
    }

    /// A member the reader does not know is refused and named, in the
    /// header and in a session line.
    @Test func unknownMembersAreRefused() throws {
        try expectRefused("{\"format\":\"topchrome-sessions\",\"version\":1,\"count\":0,\"note\":1}\n",
                          as: .corrupt(path: file.path, line: 1, byte: 0, reason: "unknown member 'note'"))
        try expectRefused("{\"format\":\"topchrome-sessions\",\"version\":1,\"count\":1}\n"
            + "{\"id\":\"00000000000000000000000000000001\",\"inset\":0,\"isRevealed\":true,\"version\":1,\"evil\":true}\n",
            as: .corrupt(path: file.path, line: 2, byte: 54, reason: "unknown member 'evil'"))
    }

    func expectRefused(_ text: String, as failure: SnapshotFile.Failure? = nil) throws {
        try text.write(toFile: file.path, atomically: true, encoding: .utf8)
        if let failure {
            #expect(throws: failure) { try file.read(taggedWith: Self.tag) }
        } else {
            #expect(throws: SnapshotFile.Failure.self) { try file.read(taggedWith: Self.tag) }
        }
        #expect(try contents(of: file.path) == text, "left untouched")
    }

    /// A file's text. An empty file is not read through Foundation, which
    /// leaks a buffer for it (a toolchain bug LeakSanitizer reports).
    func contents(of path: String) throws -> String {
        let size = (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        return size == 0 ? "" : try String(contentsOfFile: path, encoding: .utf8)
    }

    @Test func truncatedFileIsRefused() throws {
        try file.write(sessions)
        let data = try Data(contentsOf: URL(fileURLWithPath: file.path))
        try data.prefix(data.count - 20).write(to: URL(fileURLWithPath: file.path))
        #expect(throws: SnapshotFile.Failure.self) { try file.read(taggedWith: Self.tag) }
    }

    func folderContents() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
    }

    /// What the next start would refuse is never written: the write fails
    /// and the previous snapshot stays.
    @Test(arguments: [
        ChromeState(inset: 0, isRevealed: true, version: ChromeState.allowedVersions.upperBound + 1, lastAppliedSeq: nil),
        ChromeState(inset: 0, isRevealed: true, version: 0, lastAppliedSeq: nil),
        ChromeState(inset: 10_001, isRevealed: true, version: 1, lastAppliedSeq: nil),
        ChromeState(inset: .nan, isRevealed: true, version: 1, lastAppliedSeq: nil),
        ChromeState(inset: 0, isRevealed: true, version: 1, lastAppliedSeq: ScrollReport.allowedSeqs.upperBound + 1),
    ])
    func statesTheReaderRefusesAreNotWritten(_ state: ChromeState) throws {
        try file.write(sessions)
        #expect(throws: SnapshotFile.Failure.self) { try file.write([Session(id: .random(), state: state, tag: Self.tag)]) }
        #expect(try file.read(taggedWith: Self.tag) == sessions)
        #expect(try folderContents() == ["state.jsonl"], "no temp file left")
    }

    /// A session at the last version the file holds keeps working, and what
    /// the store then holds is written and read back: a version never grows
    /// past what the next start accepts.
    @Test func theLastVersionSurvivesChangesAndRestarts() throws {
        let last = ChromeState.allowedVersions.upperBound
        let store = InMemorySessionStore(capacity: 10)
        let id = SessionID.random()
        try store.restore([Session(id: id, state: ChromeState(inset: 0, isRevealed: true, version: last - 1, lastAppliedSeq: nil), tag: Self.tag)])
        _ = store.apply([.scroll(ScrollReport(contentOffsetY: 500)), .setInset(59), .disappear], to: id)
        try file.write(store.snapshot())
        let reread = try file.read(taggedWith: Self.tag)
        #expect(reread.map(\.state.version) == [last])
        #expect(reread.first?.state.isRevealed == false, "the one change it had room for")
    }

    @Test func leftoverTempFilesAreRemoved() throws {
        let names = ["state.jsonl.tmp-a1B2c3", "state.jsonl.tmp-zzzzzz", "state.jsonl.tmp-toolong", "other.jsonl.tmp-a1B2c3", "state.jsonl.tmp"]
        for name in names { try Data("x".utf8).write(to: folder.appendingPathComponent(name)) }
        try file.write(sessions)
        #expect(file.removeLeftovers() == 2)
        #expect(try folderContents() == ["other.jsonl.tmp-a1B2c3", "state.jsonl", "state.jsonl.tmp", "state.jsonl.tmp-toolong"])
        #expect(try file.read(taggedWith: Self.tag) == sessions)
    }

    /// Two writes of one file at once (here through two values, so no
    /// writer orders them) never tear each other: each has a temp file of
    /// its own. With a shared one, the later write truncated and renamed it
    /// away under the earlier, which then wrote into the state file itself.
    @Test func overlappingWritesNeverTearTheFile() throws {
        let opened = DispatchSemaphore(value: 0), resume = DispatchSemaphore(value: 0)
        var pausing = file
        pausing.pauseWhileWriting = { opened.signal(); resume.wait() }
        let paused = pausing
        let older = [sessions[0]]
        let newer = (0..<100).map { Session(id: .random(), state: ChromeState(inset: Double($0)), tag: Self.tag) }
        let first = Outcome()
        let thread = Thread { first.set(Result { () throws(SnapshotFile.Failure) in try paused.write(older) }.map { true }) }
        thread.start()
        opened.wait()
        try file.write(newer)
        resume.signal()
        first.wait()
        #expect(first.value == .success(true))
        #expect(try file.read(taggedWith: Self.tag) == older, "whole, and the last rename wins")
        #expect(try folderContents() == ["state.jsonl"])
    }

    @Test func unwritableFolderIsAnError() {
        let nowhere = SnapshotFile(path: "/nonexistent-folder/state.jsonl")
        #expect(throws: SnapshotFile.Failure.self) { try nowhere.write(sessions) }
    }

    @Test func storeSnapshotAndRestore() throws {
        let store = InMemorySessionStore()
        let id = try store.create(inset: 3).id
        _ = store.apply([.scroll(ScrollReport(contentOffsetY: 400, seq: 5))], to: id)
        try file.write(store.snapshot())

        let restored = InMemorySessionStore(capacity: 10)
        try restored.restore(try file.read(taggedWith: restored.epoch))
        #expect(restored.session(id)?.state == store.session(id)?.state)
        #expect(restored.session(id)?.tag == restored.epoch, "a restart names every state anew")
        #expect(restored.count == 1)
        let stale = restored.apply([.scroll(ScrollReport(contentOffsetY: 0, seq: 5))], to: id)
        #expect(stale?.state.isRevealed == false, "the seq mark survives the restart")
        #expect(throws: SessionStoreError.full(capacity: 1)) {
            try InMemorySessionStore(capacity: 1).restore(sessions)
        }
    }
}

/// A result handed from a thread to the test.
final class Outcome: @unchecked Sendable {
    private let lock = NSLock()
    private let done = DispatchSemaphore(value: 0)
    private var result: Result<Bool, SnapshotFile.Failure>?

    func set(_ result: Result<Bool, SnapshotFile.Failure>) {
        lock.withLock { self.result = result }
        done.signal()
    }

    /// Waits for the result.
    func wait() { done.wait() }

    /// Waits at most `seconds`: whether the result came. `wait()` still returns after it.
    func arrives(within seconds: Double) -> Bool {
        guard done.wait(timeout: .now() + seconds) == .success else { return false }
        done.signal()
        return true
    }

    var value: Result<Bool, SnapshotFile.Failure>? { lock.withLock { result } }
}
