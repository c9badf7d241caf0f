import Foundation
import Testing
import TopChromeTesting

/// What the state file tells an operator: a temp file left by a kill
/// mid-snapshot, a snapshot that works again, a folder on a full disk.
@Suite struct StateFileMessagesTests {
    typealias RunningServer = ProcessLifecycleTests.RunningServer

    let folder: URL

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("state-messages-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    /// A snapshot's temp file left by a `kill -9` mid-write is removed at
    /// start, and the start says so (it once did so in silence).
    @Test func aLeftoverTempFileIsRemovedAndLogged() throws {
        let path = folder.appendingPathComponent("state.jsonl").path
        let leftover = path + ".tmp-a1B2c3"
        try Data("{\"format\":".utf8).write(to: URL(fileURLWithPath: leftover))
        let server = try RunningServer(["--port", "0", "--state-file", path])
        _ = try server.waitUntilListening()
        #expect(!FileManager.default.fileExists(atPath: leftover))
        #expect(server.log.contains("temp_files_removed=1"), "\(server.log)")
        server.signal(SIGTERM)
        #expect(server.waitForExit(within: 10) == 0)
        let clean = try RunningServer(["--port", "0", "--state-file", path])
        _ = try clean.waitUntilListening()
        #expect(!clean.log.contains("temp_files_removed"), "nothing to say when nothing was left")
        clean.signal(SIGTERM)
        #expect(clean.waitForExit(within: 10) == 0)
    }

    /// Snapshots that failed and then work again say so, with how many failed.
    @Test func aSnapshotThatWorksAgainSaysSo() throws {
        let inner = folder.appendingPathComponent("inner")
        try FileManager.default.createDirectory(at: inner, withIntermediateDirectories: true)
        let server = try RunningServer(["--port", "0", "--state-file", inner.appendingPathComponent("state.jsonl").path,
                                        "--snapshot-interval", "1"])
        _ = try server.waitUntilListening()
        try FileManager.default.removeItem(at: inner)
        #expect(eventually(within: 10) { server.log.contains("snapshot failed") })
        try FileManager.default.createDirectory(at: inner, withIntermediateDirectories: true)
        #expect(eventually(within: 10) { server.log.contains("snapshot saved again failed_in_a_row=") }, "\(server.log)")
        server.signal(SIGTERM)
        #expect(server.waitForExit(within: 10) == 0)
    }

    /// Whether this process may mount a small tmpfs (root, outside a
    /// locked-down container): a full filesystem is made so.
    static let canMount: Bool = {
        let probe = FileManager.default.temporaryDirectory.appendingPathComponent("mount-probe-\(UUID().uuidString)")
        guard (try? FileManager.default.createDirectory(at: probe, withIntermediateDirectories: true)) != nil else { return false }
        defer { try? FileManager.default.removeItem(at: probe) }
        guard mount("tmpfs", probe.path, "tmpfs", 0, "size=64k") == 0 else { return false }
        umount(probe.path)
        return true
    }()

    /// A folder on a full filesystem takes an empty file but no snapshot:
    /// `check-config` refuses it (it once said the folder "takes snapshots").
    @Test(.enabled(if: canMount, "needs to mount a tmpfs")) func aFullFilesystemIsRefused() throws {
        let mounted = folder.appendingPathComponent("full")
        try FileManager.default.createDirectory(at: mounted, withIntermediateDirectories: true)
        #expect(mount("tmpfs", mounted.path, "tmpfs", 0, "size=256k") == 0)
        defer { umount(mounted.path) }
        let path = mounted.appendingPathComponent("state.jsonl").path
        try Data("{\"format\":\"topchrome-sessions\",\"version\":1,\"count\":0}\n".utf8).write(to: URL(fileURLWithPath: path))
        let roomy = try CheckConfigTests.check(["--state-file", path])
        #expect(roomy.status == 0, "\(roomy.errors)")
        // Fill it.
        let filler = FileManager.default.createFile(atPath: mounted.appendingPathComponent("filler").path, contents: nil)
        #expect(filler)
        let handle = try FileHandle(forWritingTo: mounted.appendingPathComponent("filler"))
        let block = Data(count: 4096)
        while (try? handle.write(contentsOf: block)) != nil {}
        try? handle.close()
        let full = try CheckConfigTests.check(["--state-file", path])
        #expect(full.status == 2, "\(full.output)")
        #expect(full.errors.contains("no room for a snapshot"), "\(full.errors)")
        #expect(!full.output.contains("state file"), "\(full.output)")
    }
}
