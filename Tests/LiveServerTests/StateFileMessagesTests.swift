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

    /// A last journal record cut short (power lost mid-write) is dropped
    /// and the start says so; the records before it are read.
    @Test func aTornLastRecordIsDroppedAndLogged() throws {
        let path = folder.appendingPathComponent("state.jsonl").path
        let first = try RunningServer(["--port", "0", "--state-file", path, "--fsync", "always"])
        _ = try first.waitUntilListening()
        let id = try #require(try TestHTTPClient(port: first.port).request("POST", "/v1/sessions").json["id"] as? String)
        first.signal(SIGKILL)
        _ = first.waitForExit(within: 10)
        let journal = try FileHandle(forWritingTo: URL(fileURLWithPath: path + ".journal-0"))
        try journal.seekToEnd()
        try journal.write(contentsOf: Data(#"{"id":"0123456789abcdef01234567"#.utf8))
        try journal.close()
        let second = try RunningServer(["--port", "0", "--state-file", path])
        let line = try second.waitUntilListening()
        #expect(line.contains("sessions_restored=1 last_stop=unclean"), "\(line)")
        #expect(line.contains("sessions_from_journal=1 sessions_removed_by_journal=0 records_dropped=1"), "\(line)")
        #expect(second.log.contains("dropped_bytes=31"), "\(second.log)")
        #expect(try TestHTTPClient(port: second.port).request("GET", "/v1/sessions/\(id)").status == 200)
        second.signal(SIGTERM)
        #expect(second.waitForExit(within: 10) == 0)
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

    /// `/metrics` says what a crash now would lose and how the journal's
    /// syncs go: with `always`, nothing is left off disk once a change is
    /// answered; with `everysec`, within a flush.
    @Test(arguments: ["always", "everysec"]) func theJournalShowsInMetrics(_ policy: String) throws {
        let server = try RunningServer(["--port", "0", "--state-file", folder.appendingPathComponent("state.jsonl").path,
                                        "--fsync", policy, "--log-level", "warn"])
        _ = try server.waitUntilListening()
        let client = try TestHTTPClient(port: server.port)
        func metric(_ name: String) throws -> Double? {
            let text = try client.request("GET", "/metrics").text
            return text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Double($0.split(separator: " ")[1]) }
        }
        let empty = try #require(try metric("topchrome_state_file_journal_bytes"))
        #expect(try client.request("POST", "/v1/sessions").status == 201)
        if policy == "always" {
            #expect(try metric("topchrome_state_file_changes_not_on_disk") == 0)
            #expect(try metric("topchrome_state_file_journal_last_fsync_timestamp_seconds") ?? 0 > 1e9)
        } else {
            #expect(eventually { (try? metric("topchrome_state_file_journal_last_fsync_timestamp_seconds")) ?? 0 > 1e9 })
            #expect(eventually { (try? metric("topchrome_state_file_changes_not_on_disk")) == 0 })
        }
        #expect(try metric("topchrome_state_file_journal_bytes") ?? 0 > empty, "the record is in the journal")
        #expect(try metric("topchrome_state_file_journal_last_fsync_duration_seconds") ?? -1 >= 0)
        server.signal(SIGTERM)
        #expect(server.waitForExit(within: 10) == 0)
    }

    /// A journal that outgrows its limit starts a snapshot before the
    /// interval (here an hour), which starts a new journal.
    @Test func aLongJournalStartsASnapshot() throws {
        let path = folder.appendingPathComponent("state.jsonl").path
        let server = try LiveServer(memoryOnly: true) {
            $0.stateFile.path = path
            $0.stateFile.snapshotInterval = 3600
            $0.stateFile.journalSnapshotBytes = 4096
            $0.logging.level = .warn
        }
        let client = try TestHTTPClient(port: server.port)
        for _ in 0..<60 { #expect(try client.request("POST", "/v1/sessions").status == 201) }
        #expect(eventually(within: 10) { (try? String(contentsOfFile: path, encoding: .utf8))?.contains("\"count\":60") == true })
        #expect(eventually { (try? FileManager.default.contentsOfDirectory(atPath: folder.path))?.contains("state.jsonl.journal-0") == false })
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

/// `topchrome state-file check` and `repair`, on a state file a kill and
/// a hand edit left: check names the line and byte and exits 2; repair
/// keeps every readable session, keeps the old files, and a start then
/// reads the mended file.
@Suite struct StateFileCommandTests {
    typealias RunningServer = ProcessLifecycleTests.RunningServer

    @Test func checkFindsAndRepairMends() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("state-command-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("state.jsonl").path
        let server = try RunningServer(["--port", "0", "--state-file", path, "--fsync", "always"])
        _ = try server.waitUntilListening()
        let client = try TestHTTPClient(port: server.port)
        let ids = try (0..<3).map { _ in try #require(try client.request("POST", "/v1/sessions").json["id"] as? String) }
        server.signal(SIGKILL)
        _ = server.waitForExit(within: 10)

        let healthy = try CommandLineTests.run(["state-file", "check", path])
        #expect(healthy.status == 0, "\(healthy.errors)")
        #expect(healthy.output.contains("3 sessions after them"), "\(healthy.output)")

        // A bad line in the middle of the journal, and a torn last one.
        let journal = path + ".journal-0"
        var lines = try String(contentsOfFile: journal, encoding: .utf8).split(separator: "\n").map(String.init)
        lines.insert(#"{"id":"nope","inset":0}"#, at: 2)
        try (lines.joined(separator: "\n") + "\n" + #"{"id":"0000"#).write(toFile: journal, atomically: true, encoding: .utf8)
        let byte = lines[0..<2].map { $0.utf8.count + 1 }.reduce(0, +)
        let damaged = try CommandLineTests.run(["state-file", "check", path])
        #expect(damaged.status == 2)
        #expect(damaged.errors.contains("'\(journal)' line 3, byte \(byte): no valid id"), "\(damaged.errors)")
        #expect(damaged.output.contains("warning:"), "the torn record is named: \(damaged.output)")
        let refused = try RunningServer(["--port", "0", "--state-file", path])
        #expect(refused.waitForExit(within: 10) == 2, "a start refuses it too")

        let repaired = try CommandLineTests.run(["state-file", "repair", path])
        #expect(repaired.status == 0, "\(repaired.errors)")
        #expect(repaired.output.contains("dropped: '\(journal)' line 3"), "\(repaired.output)")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        #expect(names.contains { $0.hasPrefix("state.jsonl.journal-0.before-repair-") }, "\(names)")
        #expect(try CommandLineTests.run(["state-file", "check", path]).status == 0)
        #expect(try CommandLineTests.run(["state-file", "frobnicate", path]).status == 2)

        let again = try RunningServer(["--port", "0", "--state-file", path])
        _ = try again.waitUntilListening()
        let reader = try TestHTTPClient(port: again.port)
        for id in ids { #expect(try reader.request("GET", "/v1/sessions/\(id)").status == 200) }
        again.signal(SIGTERM)
        #expect(again.waitForExit(within: 10) == 0)
    }
}
