import Foundation
import Testing
import TopChromeTesting

/// Restarts as operators cause them: graceful stops, stops under load, kill -9.
@Suite struct PersistenceDrillTests {
    typealias RunningServer = ProcessLifecycleTests.RunningServer

    let folder: URL
    var stateFile: String { folder.appendingPathComponent("state.jsonl").path }

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("drill-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    func start(_ extra: [String] = []) throws -> RunningServer {
        let server = try RunningServer(["--port", "0", "--state-file", stateFile] + extra)
        _ = try server.waitUntilListening()
        return server
    }

    func states(_ ids: [String], port: Int) throws -> [String: String] {
        let client = try TestHTTPClient(port: port)
        var result: [String: String] = [:]
        for id in ids { result[id] = try client.request("GET", "/v1/sessions/\(id)").text }
        return result
    }

    @Test func gracefulRestartKeepsEverySession() throws {
        let first = try start()
        let client = try TestHTTPClient(port: first.port)
        var ids: [String] = []
        for index in 0..<50 {
            let id = try #require(try client.json("POST", "/v1/sessions", #"{"inset": \#(index)}"#).json["id"] as? String)
            try client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": \#(index * 10), "seq": \#(index + 100)}"#)
            ids.append(id)
        }
        let before = try states(ids, port: first.port)
        first.signal(SIGTERM)
        #expect(first.waitForExit(within: 10) == 0)

        let second = try start()
        #expect(try states(ids, port: second.port) == before, "identical after the restart")
        let stale = try TestHTTPClient(port: second.port).json("POST", "/v1/sessions/\(ids[30])/scroll", #"{"contentOffsetY": 0, "seq": 130}"#)
        #expect(try stale.json["isRevealed"] as? Bool == false, "seq marks survive too")
        second.signal(SIGTERM)
        #expect(second.waitForExit(within: 10) == 0)
    }

    /// A state file an operator edited (or one written for another inset)
    /// may hold a chrome moved further than its height: the server loads it,
    /// answers it as fully hidden, and takes reports for it. (Its answer
    /// once divided the offset by a near-zero height and trapped.)
    @Test func aStoredOffsetPastItsHeightIsAnsweredNotACrash() throws {
        let first = try start()
        let client = try TestHTTPClient(port: first.port)
        let id = try #require(try client.json("POST", "/v1/sessions", #"{"inset": 40, "behavior": "enterAlways"}"#).json["id"] as? String)
        first.signal(SIGTERM)
        #expect(first.waitForExit(within: 10) == 0)
        let text = try String(contentsOfFile: stateFile, encoding: .utf8)
        let edited = text.replacingOccurrences(of: #""inset":40,"#, with: #""inset":1e-40,"heightOffset":-30,"#)
        #expect(edited != text, "the session's line: \(text)")
        try edited.write(toFile: stateFile, atomically: true, encoding: .utf8)

        let second = try start()
        let again = try TestHTTPClient(port: second.port)
        let answer = try again.request("GET", "/v1/sessions/\(id)")
        #expect(answer.status == 200, "\(answer.text)")
        #expect(try answer.json["collapsedFraction"] as? Double == 1)
        let scrolled = try again.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 500}"#)
        #expect(scrolled.status == 200, "\(scrolled.text)")
        #expect(second.process.isRunning)
        second.signal(SIGTERM)
        #expect(second.waitForExit(within: 10) == 0)
    }

    /// Clients post reports as fast as they can while SIGTERM arrives. Every
    /// report answered 2xx must be in the restarted server, and no client may
    /// see an error before the stop began.
    @Test func stopUnderLoadLosesNothingAcknowledged() throws {
        let first = try start()
        let ids = try (0..<8).map { _ in try #require(try TestHTTPClient(port: first.port).request("POST", "/v1/sessions").json["id"] as? String) }
        let port = first.port
        final class Outcome: @unchecked Sendable {
            let lock = NSLock()
            var acknowledged: [String: Int] = [:]
            var firstErrorAt: Date?
        }
        let outcome = Outcome()
        let group = DispatchGroup()
        for id in ids {
            group.enter()
            // A thread each: blocking clients on Dispatch's pool would not all start.
            Thread {
                defer { group.leave() }
                var client = try? TestHTTPClient(port: port)
                var seq = 0
                let deadline = Date().addingTimeInterval(8)
                while Date() < deadline {
                    seq += 1
                    do {
                        guard let connection = client else { throw TestClientError.closed }
                        let response = try connection.json("POST", "/v1/sessions/\(id)/scroll",
                                                           #"{"contentOffsetY": \#(seq % 2 == 0 ? 0 : 500), "seq": \#(seq)}"#)
                        if (200..<300).contains(response.status), let version = try? response.json["version"] as? Int {
                            outcome.lock.withLock { outcome.acknowledged[id] = version }
                        }
                        if response.header("Connection")?.lowercased() == "close" { client = try? TestHTTPClient(port: port) }
                    } catch {
                        outcome.lock.withLock { if outcome.firstErrorAt == nil { outcome.firstErrorAt = Date() } }
                        // The server is going away: try a new connection, until refused for good.
                        client = try? TestHTTPClient(port: port)
                        if client == nil { return }
                    }
                }
            }.start()
        }
        usleep(700_000)
        let stopAt = Date()
        first.signal(SIGTERM)
        group.wait()
        #expect(first.waitForExit(within: 10) == 0)
        // Requests refused during the stop are not waited for: the clients'
        // steady traffic must not hold the stop up until its timeout (10 s).
        #expect(Date().timeIntervalSince(stopAt) < 4, "the stop did not wait out the traffic")
        if let errorAt = outcome.firstErrorAt { #expect(errorAt >= stopAt, "no errors before the stop began") }

        let second = try start()
        let client = try TestHTTPClient(port: second.port)
        for id in ids {
            let acknowledged = try #require(outcome.acknowledged[id], "the load did run")
            let version = try client.request("GET", "/v1/sessions/\(id)").json["version"] as? Int
            #expect(version == acknowledged, "the last answered version is the one kept")
        }
        second.signal(SIGTERM)
        _ = second.waitForExit(within: 10)
    }

    /// Stops timed against snapshots under deletes. A periodic snapshot
    /// that was collected before some deletes and finished after the last
    /// one brought acknowledged deletes back; two at once tore the file. Here
    /// snapshots run back to back, as a periodic one would at the worst
    /// moment, while a client deletes and the service stops; the file must
    /// load and hold no session whose DELETE was answered 204, and every
    /// session nobody deleted.
    @Test func stopsDuringSnapshotsKeepEveryAcknowledgedDelete() throws {
        for round in 0..<2 {
            let path = folder.appendingPathComponent("round-\(round).jsonl").path
            let server = try LiveServer(memoryOnly: true) { $0.stateFile.path = path; $0.logging.level = .warn }
            let store = server.service.backend.memoryStore!
            let ids = try (0..<5_000).map { _ in try store.create(inset: 0).id.description }
            final class Progress: @unchecked Sendable {
                let lock = NSLock()
                var deleted: Set<String> = []
                var attempted: Set<String> = []
                var isStopped = false
            }
            let progress = Progress()
            let group = DispatchGroup()
            let port = server.port
            group.enter()
            Thread {
                defer { group.leave() }
                var client = try? TestHTTPClient(port: port)
                for id in ids.shuffled() {
                    guard let connection = client else { return }
                    progress.lock.withLock { _ = progress.attempted.insert(id) }
                    // Refused (503) or cut off: the stop has begun.
                    guard let response = try? connection.request("DELETE", "/v1/sessions/\(id)"), response.status != 503 else { return }
                    if response.status == 204 { progress.lock.withLock { _ = progress.deleted.insert(id) } }
                    if response.header("Connection")?.lowercased() == "close" { client = try? TestHTTPClient(port: port) }
                }
            }.start()
            // One at a time, as the periodic timer runs them.
            group.enter()
            Thread {
                defer { group.leave() }
                while !progress.lock.withLock({ progress.isStopped }) { server.service.saveSnapshot() }
            }.start()
            usleep(150_000 + UInt32(round) * 50_000)
            server.service.stop()
            progress.lock.withLock { progress.isStopped = true }
            group.wait()

            let (deleted, attempted) = progress.lock.withLock { (progress.deleted, progress.attempted) }
            #expect(!deleted.isEmpty, "deletes were acknowledged before the stop")
            let restarted = try LiveServer(memoryOnly: true) { $0.stateFile.path = path; $0.logging.level = .warn }
            let kept = Set(restarted.service.backend.memoryStore!.snapshot().map { $0.id.description })
            let returned = kept.intersection(deleted).count
            let lost = Set(ids).subtracting(attempted).subtracting(kept).count
            #expect(returned == 0, "round \(round): acknowledged deletes came back")
            #expect(lost == 0, "round \(round): sessions nobody deleted were lost")
        }
    }

    @Test func killNineKeepsTheLastSnapshot() throws {
        let first = try start(["--snapshot-interval", "1"])
        let client = try TestHTTPClient(port: first.port)
        let kept = try #require(try client.json("POST", "/v1/sessions", #"{"inset": 59}"#).json["id"] as? String)
        usleep(1_600_000)  // one snapshot has been taken since
        let before = try states([kept], port: first.port)
        first.signal(SIGKILL)
        _ = first.waitForExit(within: 5)

        let second = try start()
        #expect(try states([kept], port: second.port) == before)
        second.signal(SIGTERM)
        _ = second.waitForExit(within: 10)
    }

    /// The all-zero id is no id; a file holding it is refused like any bad line.
    @Test func allZeroIdInTheStateFileStopsTheStart() throws {
        let text = "{\"format\":\"topchrome-sessions\",\"version\":1,\"count\":1}\n"
            + "{\"id\":\"00000000000000000000000000000000\",\"inset\":59,\"isRevealed\":true,\"version\":1}\n"
        try text.write(toFile: stateFile, atomically: true, encoding: .utf8)
        let server = try RunningServer(["--port", "0", "--state-file", stateFile])
        #expect(server.waitForExit(within: 5) == 2)
        #expect(server.log.contains("(line 2, byte 54: no valid id)"), "\(server.log)")
        #expect(try String(contentsOfFile: stateFile, encoding: .utf8) == text)
    }

    @Test func corruptStateFileStopsTheStartAndIsLeftAlone() throws {
        let garbage = "{\"format\":\"topchrome-sessions\",\"version\":1,\"count\":3}\nnot a session\n"
        try garbage.write(toFile: stateFile, atomically: true, encoding: .utf8)
        let server = try RunningServer(["--port", "0", "--state-file", stateFile])
        #expect(server.waitForExit(within: 5) == 2)
        #expect(server.log.contains("state file"))
        #expect(try String(contentsOfFile: stateFile, encoding: .utf8) == garbage)
    }
}
