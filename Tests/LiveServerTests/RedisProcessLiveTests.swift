import Foundation
import RedisTestSupport
import Testing
import TopChromeTesting

/// The `topchrome` executable on Redis, as an operator runs it.
@Suite struct RedisProcessLiveTests {
    /// An operator learns from the log, once per change and not per
    /// request, that Redis cannot be reached, went away, refused the
    /// password, or came back, with the node's address and the reason.
    @Test(arguments: ["text", "json"])
    func redisTroubleIsLoggedOncePerChange(_ format: String) throws {
        let redis = try RedisServer(["--requirepass", "s3cret"])
        redis.stop()
        let node = "127.0.0.1:\(redis.port)"
        let password = FileManager.default.temporaryDirectory.appendingPathComponent("password-\(UUID().uuidString)")
        try "s3cret\n".write(to: password, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: password) }
        let server = try ProcessLifecycleTests.RunningServer(
            ["--port", "0", "--threads", "1", "--log-format", format, "--store", "redis://\(node)",
             "--redis-password-file", password.path])
        _ = try server.waitUntilListening()
        let client = try TestHTTPClient(port: server.port)
        func lines(_ text: String, _ message: String) -> [Substring] {
            text.split(separator: "\n").filter { $0.contains(message) && $0.contains(node) }
        }
        // Many requests and reconnection attempts while Redis is away: one line.
        for _ in 0..<5 { #expect(try client.json("POST", "/v1/sessions", "").status == 503) }
        #expect(eventually { lines(server.log, "Redis unreachable").count == 1 })
        try redis.restart()
        #expect(eventually(within: 10) { (try? client.request("GET", "/readyz").status) == 200 })
        #expect(eventually { lines(server.standardOutput, "Redis reachable again").count == 1 })
        redis.stop()
        #expect(eventually { lines(server.log, "Redis connection lost").count == 1 })
        for _ in 0..<5 { #expect(try client.json("POST", "/v1/sessions", "").status == 503) }
        try "wrong\n".write(to: password, atomically: true, encoding: .utf8)
        server.signal(SIGTERM)
        #expect(server.waitForExit(within: 10) == 0)
        // One stream, so the story reads in order: away, back, away again.
        // (The start's checks of the node say they could not ask it: not trouble lines.)
        let kinds = ["Redis unreachable", "Redis reachable again", "Redis connection lost"]
        let story = lines(server.log, "Redis").compactMap { line in kinds.first { line.contains($0) } }
        #expect(story == ["Redis unreachable", "Redis reachable again", "Redis connection lost"], "\(server.log)")
        #expect(server.standardError.isEmpty, "\(server.standardError)")

        // The wrong password: refused, said once, as an error.
        try redis.restart()
        let refused = try ProcessLifecycleTests.RunningServer(
            ["--port", "0", "--threads", "1", "--log-format", format, "--store", "redis://\(node)",
             "--redis-password-file", password.path])
        _ = try refused.waitUntilListening()
        #expect(eventually { lines(refused.log, "Redis refused the connection").count == 1 })
        usleep(300_000)  // retries go on meanwhile
        refused.signal(SIGTERM)
        #expect(refused.waitForExit(within: 10) == 0)

        let errors = server.log + refused.log
        #expect(lines(errors, "Redis unreachable").count == 1, "\(errors)")
        #expect(lines(errors, "Redis connection lost").count == 1, "\(errors)")
        let refusal = lines(refused.log, "Redis refused the connection")
        #expect(refusal.count == 1, "\(errors)")
        #expect(refusal.first?.contains("WRONGPASS") == true)
        #expect(refusal.first?.contains(format == "json" ? #""level":"error""# : "error") == true, "\(refusal)")
        #expect(lines(server.log, "Redis connection lost").first?.contains(format == "json" ? #""level":"warn""# : "warn") == true)
        if format == "json" {
            for line in lines(errors + server.standardOutput, "Redis") {
                #expect((try? JSONSerialization.jsonObject(with: Data(line.utf8))) is [String: Any], "not JSON: \(line)")
            }
        }
    }

    /// Watching a session reads it and listens to its channel; none of that
    /// may print anything but log lines, or a JSON log stream breaks.
    @Test func watchingPrintsOnlyLogLines() throws {
        let redis = try RedisServer()
        // Redis's timeout as LiveServer's (5 s): this is about the log, and
        // a sanitizer's server on a busy machine missed the default second
        // for over half a minute, never ready.
        let server = try ProcessLifecycleTests.RunningServer(
            ["--port", "0", "--threads", "1", "--log-format", "json", "--store", "redis://127.0.0.1:\(redis.port)", "--redis-timeout", "5"])
        _ = try server.waitUntilListening()
        let client = try TestHTTPClient(port: server.port)
        #expect(eventually(within: 10) { (try? client.request("GET", "/readyz").status) == 200 }, "\(server.standardOutput)")
        let created = try client.json("POST", "/v1/sessions", "")
        let id = try #require(try created.json["id"] as? String)
        let stream = try EventStreamClient(port: server.port, sessionID: id)
        #expect(versionOf(try stream.nextState()?.id) == 1)
        #expect(try client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 300}"#).status == 200)
        #expect(versionOf(try stream.nextState()?.id) == 2)
        server.signal(SIGTERM)
        #expect(server.waitForExit(within: 10) == 0)
        let lines = server.standardOutput.split(separator: "\n")
        #expect(lines.count >= 3)
        for line in lines {
            #expect((try? JSONSerialization.jsonObject(with: Data(line.utf8))) is [String: Any], "not a log line: \(line)")
        }
    }
}
