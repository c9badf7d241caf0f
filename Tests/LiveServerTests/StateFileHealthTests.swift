import Foundation
import Testing
import TopChromeTesting

/// A state file that cannot be written, as operators meet it: a mistyped
/// folder at start, a folder that goes away while the service runs, and the
/// last snapshot failing at the stop. None of them may lose sessions silently.
@Suite struct StateFileHealthTests {
    typealias RunningServer = ProcessLifecycleTests.RunningServer

    let folder: URL

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("state-health-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    @Test func aFolderThatDoesNotExistStopsTheStart() throws {
        let path = folder.appendingPathComponent("missing/state.jsonl").path
        let server = try RunningServer(["--port", "0", "--state-file", path])
        #expect(server.waitForExit(within: 10) == 2)
        let errors = server.log
        #expect(errors.contains("cannot write state file '\(path)'"), "\(errors)")
        #expect(errors.contains("its folder '\(folder.path)/missing' cannot take a file (No such file or directory)"), "\(errors)")
    }

    /// Warnings and errors share the one stream by default; an operator who
    /// wants them apart asks for it.
    @Test func errorsGoToStderrWhenAskedTo() throws {
        let path = folder.appendingPathComponent("missing/state.jsonl").path
        let server = try RunningServer(["--port", "0", "--state-file", path, "--log-errors-to", "stderr"])
        #expect(server.waitForExit(within: 10) == 2)
        #expect(server.standardError.contains("cannot write state file '\(path)'"), "\(server.standardError)")
        #expect(!server.log.contains("cannot write state file"), "\(server.log)")
    }

    @Test func aFolderThatIsAFileStopsTheStart() throws {
        let notAFolder = folder.appendingPathComponent("plain")
        try Data("x".utf8).write(to: notAFolder)
        let server = try RunningServer(["--port", "0", "--state-file", notAFolder.path + "/state.jsonl"])
        #expect(server.waitForExit(within: 10) == 2)
        #expect(server.log.contains("state.jsonl': Not a directory"), "\(server.log)")
    }

    /// The check leaves nothing behind in the folder: while it runs, the
    /// journal is there; after a clean stop, the snapshot alone.
    @Test func theStartCheckLeavesNoFile() throws {
        let path = folder.appendingPathComponent("state.jsonl").path
        let server = try RunningServer(["--port", "0", "--state-file", path])
        _ = try server.waitUntilListening()
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["state.jsonl.journal-0"])
        server.signal(SIGTERM)
        #expect(server.waitForExit(within: 10) == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["state.jsonl"])
    }

    /// Snapshots that fail while the service runs show on `/readyz` (still
    /// 200: the answers are right, and the only instance must keep serving)
    /// and on `/metrics`; a good write clears `/readyz` again.
    @Test func failingSnapshotsShowOnReadinessAndMetrics() throws {
        let inner = folder.appendingPathComponent("inner")
        try FileManager.default.createDirectory(at: inner, withIntermediateDirectories: true)
        let path = inner.appendingPathComponent("state.jsonl").path
        let server = try RunningServer(["--port", "0", "--state-file", path, "--snapshot-interval", "1"])
        _ = try server.waitUntilListening()
        let client = try TestHTTPClient(port: server.port)
        #expect(try client.request("POST", "/v1/sessions").status == 201)
        let healthy = try client.request("GET", "/readyz")
        #expect(healthy.status == 200)
        #expect(try healthy.json["degraded"] == nil)
        #expect(eventually { (try? client.request("GET", "/metrics").text.contains("topchrome_state_file_writes_total{result=\"saved\"} 1")) == true })

        try FileManager.default.removeItem(at: inner)
        // The journal's flush may say so first; the snapshot's failure comes within its interval.
        #expect(eventually(within: 10) {
            ((try? client.request("GET", "/readyz").json["degraded"] as? [String: Any])?["stateFile"] as? String)?
                .contains("cannot write state file") == true
        })
        let degraded = try client.request("GET", "/readyz")
        #expect(degraded.status == 200)
        let detail = try #require((try degraded.json["degraded"] as? [String: Any])?["stateFile"] as? String)
        #expect(detail.contains("cannot write state file '\(path)'"), "\(detail)")
        #expect(detail.contains("failed in a row; it last held every session at 20"), "\(detail)")
        let metrics = try client.request("GET", "/metrics").text
        #expect(!metrics.contains("topchrome_state_file_writes_total{result=\"failed\"} 0"), "\(metrics)")
        #expect(!metrics.contains("topchrome_state_file_failures_in_a_row 0\n"), "\(metrics)")
        #expect(metrics.contains("topchrome_state_file_last_saved_timestamp_seconds 1"), "\(metrics)")
        // A change now cannot reach the journal either (its file went with the folder): named too.
        #expect(try client.request("POST", "/v1/sessions").status == 201)
        #expect(eventually(within: 10) {
            ((try? client.request("GET", "/readyz").json["degraded"] as? [String: Any])?["stateFile"] as? String)?
                .contains("the journal cannot keep changes") == true
        })

        try FileManager.default.createDirectory(at: inner, withIntermediateDirectories: true)
        #expect(eventually(within: 10) { (try? client.request("GET", "/readyz").json["degraded"]) == nil })
        #expect(try client.request("GET", "/metrics").text.contains("topchrome_state_file_failures_in_a_row 0\n"))
        server.signal(SIGTERM)
        #expect(server.waitForExit(within: 10) == 0)
    }

    /// The state file's path and error are for operators: with a bearer
    /// token, `/readyz` names them only to a request that carries it.
    @Test func degradedNeedsTheToken() throws {
        let inner = folder.appendingPathComponent("inner")
        try FileManager.default.createDirectory(at: inner, withIntermediateDirectories: true)
        let token = folder.appendingPathComponent("token")
        try Data("s3cret-token\n".utf8).write(to: token)
        let server = try RunningServer(["--port", "0", "--state-file", inner.appendingPathComponent("state.jsonl").path,
                                        "--snapshot-interval", "1", "--auth-token-file", token.path])
        _ = try server.waitUntilListening()
        try FileManager.default.removeItem(at: inner)
        let client = try TestHTTPClient(port: server.port)
        let authorized = [("Authorization", "Bearer s3cret-token")]
        #expect(eventually(within: 10) { (try? client.request("GET", "/readyz", headers: authorized).json["degraded"]) != nil })
        let anyone = try client.request("GET", "/readyz")
        #expect(anyone.status == 200)
        #expect(anyone.text == #"{"status":"ready"}"#)
        server.signal(SIGKILL)
    }

    /// The last snapshot failing at the stop is an error line and exit 1,
    /// so an orchestrator sees the sessions were lost.
    @Test func aFailingLastSnapshotFailsTheStop() throws {
        let inner = folder.appendingPathComponent("inner")
        try FileManager.default.createDirectory(at: inner, withIntermediateDirectories: true)
        let path = inner.appendingPathComponent("state.jsonl").path
        let server = try RunningServer(["--port", "0", "--state-file", path])
        _ = try server.waitUntilListening()
        #expect(try TestHTTPClient(port: server.port).request("POST", "/v1/sessions").status == 201)
        try FileManager.default.removeItem(at: inner)
        server.signal(SIGTERM)
        #expect(server.waitForExit(within: 10) == 1)
        let errors = server.log
        #expect(errors.contains("topchrome stopped without saving its sessions"), "\(errors)")
    }

    /// A stop whose snapshot fails when nothing changed since the last
    /// good one loses nothing, and says so by its exit status (it once
    /// said sessions were lost).
    @Test func aFailingLastSnapshotWithNothingChangedLosesNothing() throws {
        let inner = folder.appendingPathComponent("inner")
        try FileManager.default.createDirectory(at: inner, withIntermediateDirectories: true)
        let server = try RunningServer(["--port", "0", "--state-file", inner.appendingPathComponent("state.jsonl").path])
        _ = try server.waitUntilListening()
        try FileManager.default.removeItem(at: inner)
        server.signal(SIGTERM)
        #expect(server.waitForExit(within: 10) == 0)
        #expect(!server.log.contains("are lost"), "\(server.log)")
    }

    /// The last snapshot failing while the journal holds every change
    /// loses nothing: the stop exits 0 and the next start reads the journal.
    @Test func aFailingLastSnapshotWithTheJournalLosesNothing() throws {
        let path = folder.appendingPathComponent("state.jsonl").path
        let server = try RunningServer(["--port", "0", "--state-file", path, "--fsync", "always"])
        _ = try server.waitUntilListening()
        let id = try #require(try TestHTTPClient(port: server.port).request("POST", "/v1/sessions").json["id"] as? String)
        // A folder where the snapshot goes: it cannot be renamed into place.
        let blocker = URL(fileURLWithPath: path)
        try FileManager.default.createDirectory(at: blocker, withIntermediateDirectories: false)
        try Data("x".utf8).write(to: blocker.appendingPathComponent("keep"))
        server.signal(SIGTERM)
        #expect(server.waitForExit(within: 10) == 0, "\(server.log)")
        #expect(server.log.contains("last snapshot failed"), "\(server.log)")
        try FileManager.default.removeItem(at: blocker)
        let again = try RunningServer(["--port", "0", "--state-file", path])
        let line = try again.waitUntilListening()
        #expect(line.contains("sessions_restored=1 last_stop=unclean"), "\(line)")
        #expect(try TestHTTPClient(port: again.port).request("GET", "/v1/sessions/\(id)").status == 200)
        again.signal(SIGTERM)
        #expect(again.waitForExit(within: 10) == 0)
    }
}
