import Foundation
import SessionSnapshots
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

    let sessions = [
        Session(id: .random(), state: ChromeState()),
        Session(id: .random(), state: ChromeState(inset: 59.5, isRevealed: false, version: 7, lastAppliedSeq: 9_007_199_254_740_991)),
        Session(id: SessionID(high: 0, low: 1), state: ChromeState(inset: 10_000, isRevealed: true, version: 123_456, lastAppliedSeq: 0)),
    ]

    @Test func roundTrips() throws {
        try file.write(sessions)
        #expect(try file.read() == sessions)
        #expect(!FileManager.default.fileExists(atPath: file.path + ".tmp"), "the temp file was renamed into place")
    }

    @Test func missingFileIsAFirstStart() throws {
        #expect(try file.read() == [])
    }

    @Test func replacesTheWholeFile() throws {
        try file.write(sessions)
        try file.write([sessions[1]])
        #expect(try file.read() == [sessions[1]])
        try file.write([])
        #expect(try file.read() == [])
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
        try expectRefused(text, as: .corrupt(path: file.path, line: 3, reason: "no valid id"))
    }

    func expectRefused(_ text: String, as failure: SnapshotFile.Failure? = nil) throws {
        try text.write(toFile: file.path, atomically: true, encoding: .utf8)
        if let failure {
            #expect(throws: failure) { try file.read() }
        } else {
            #expect(throws: SnapshotFile.Failure.self) { try file.read() }
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
        #expect(throws: SnapshotFile.Failure.self) { try file.read() }
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
        try restored.restore(try file.read())
        #expect(restored.session(id) == store.session(id))
        #expect(restored.count == 1)
        let stale = restored.apply([.scroll(ScrollReport(contentOffsetY: 0, seq: 5))], to: id)
        #expect(stale?.state.isRevealed == false, "the seq mark survives the restart")
        #expect(throws: SessionStoreError.full(capacity: 1)) {
            try InMemorySessionStore(capacity: 1).restore(sessions)
        }
    }
}
