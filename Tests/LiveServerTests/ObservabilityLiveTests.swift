import Foundation
import Testing
import TopChromeTesting

/// Metrics and logs as operators read them.
@Suite struct ObservabilityLiveTests {
    /// The value of one series in a Prometheus text exposition, e.g. `name{a="b"}`.
    func value(of series: String, in text: String) -> Double? {
        text.split(separator: "\n").first { $0.hasPrefix(series + " ") }
            .flatMap { Double($0.split(separator: " ").last ?? "") }
    }

    @Test func countersMoveAsRequestsAreMade() throws {
        let server = try LiveServer(memoryOnly: true)
        let client = try server.client()
        let before = try client.request("GET", "/metrics")
        #expect(before.status == 200)
        #expect(before.header("Content-Type") == "text/plain; version=0.0.4; charset=utf-8")

        let id = try server.createSession()
        try client.json("POST", "/v1/sessions/\(id)/scroll", #"[{"contentOffsetY": 500, "seq": 2}, {"contentOffsetY": 0, "seq": 1}]"#)
        try client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 0, "axis": "horizontal"}"#)
        try client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 0}"#)
        try client.request("GET", "/v1/sessions/\(String(repeating: "0", count: 32))")

        let text = try client.request("GET", "/metrics").text
        #expect(value(of: #"topchrome_http_requests_total{method="POST",route="/v1/sessions/{id}/scroll",status="200"}"#, in: text) == 3)
        #expect(value(of: #"topchrome_http_requests_total{method="POST",route="/v1/sessions",status="201"}"#, in: text) == 1)
        #expect(value(of: #"topchrome_http_requests_total{method="GET",route="/v1/sessions/{id}",status="404"}"#, in: text) == 1)
        #expect(value(of: #"topchrome_scroll_reports_total{outcome="applied"}"#, in: text) == 2)
        #expect(value(of: #"topchrome_scroll_reports_total{outcome="stale"}"#, in: text) == 1)
        #expect(value(of: #"topchrome_scroll_reports_total{outcome="horizontal"}"#, in: text) == 1)
        #expect(value(of: "topchrome_reveal_flips_total", in: text) == 2)
        #expect(value(of: "topchrome_sessions", in: text) == 1)
        #expect(value(of: "topchrome_watchers", in: text) == 0)
        #expect(value(of: #"topchrome_http_request_duration_seconds_count{route="/v1/sessions/{id}/scroll"}"#, in: text) == 3)
        #expect(value(of: #"topchrome_build_info{version="1.0.0",commit="\#(CommandLineTests.commitBuilt)"}"#, in: text) == 1)
        #expect((value(of: "process_start_time_seconds", in: text) ?? 0) > 1_700_000_000)
        #expect((value(of: "process_cpu_seconds_total", in: text) ?? 0) > 0)
        #expect((value(of: "process_resident_memory_bytes", in: text) ?? 0) > 0)
        #expect((value(of: "process_open_fds", in: text) ?? 0) > 0)
        #expect(value(of: "topchrome_store_up", in: text) == 1)
        #expect(!text.contains(id), "no session id in any label")
    }

    @Test func accessLogIsOneJSONLinePerRequestWithShortIds() throws {
        let tokenFile = FileManager.default.temporaryDirectory.appendingPathComponent("token-\(UUID().uuidString)")
        try "log-secret-token".write(to: tokenFile, atomically: true, encoding: .utf8)
        let server = try ProcessLifecycleTests.RunningServer(
            ["--port", "0", "--log-format", "json", "--auth-token-file", tokenFile.path])
        _ = try server.waitUntilListening()
        let client = try TestHTTPClient(port: server.port)
        let auth = [("Authorization", "Bearer log-secret-token")]
        let id = try #require(try client.request("POST", "/v1/sessions", headers: auth).json["id"] as? String)
        try client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 300}"#, headers: auth)
        try client.request("GET", "/v1/sessions/\(id)")
        server.signal(SIGTERM)
        #expect(server.waitForExit(within: 10) == 0)
        usleep(100_000)

        let lines = server.standardOutput.split(separator: "\n")
        let entries = try lines.map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] ?? [:] }
        #expect(entries.allSatisfy { $0["time"] is String && $0["level"] is String && $0["msg"] is String })
        let requests = entries.filter { $0["msg"] as? String == "request" }
        #expect(requests.count == 3)
        let scroll = try #require(requests.first { $0["route"] as? String == "/v1/sessions/{id}/scroll" })
        #expect(scroll["method"] as? String == "POST")
        #expect(scroll["status"] as? Int == 200)
        #expect(scroll["session"] as? String == String(id.prefix(8)))
        #expect(scroll["duration_ms"] is Double || scroll["duration_ms"] is Int)
        #expect((scroll["bytes"] as? Int ?? 0) > 0)
        #expect(requests.last?["status"] as? Int == 401)
        #expect(entries.contains { ($0["msg"] as? String)?.hasPrefix("topchrome listening on") == true })
        #expect(entries.contains { $0["msg"] as? String == "topchrome stopped" })
        #expect(!server.standardOutput.contains(id), "a log reader cannot take over a session")
        #expect(!server.standardOutput.contains("log-secret-token"), "the token never appears")
    }

    /// Request lines are written in batches, but a batch never waits for
    /// the next request: a line reaches stdout while the server keeps
    /// running (within a quarter second by design; the wait here is only a bound).
    @Test func requestLinesReachStdoutWhileServing() throws {
        let server = try ProcessLifecycleTests.RunningServer(["--port", "0"])
        _ = try server.waitUntilListening()
        let client = try TestHTTPClient(port: server.port)
        let id = try #require(try client.request("POST", "/v1/sessions").json["id"] as? String)
        try client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 300}"#)
        let expected = "info request method=POST route=/v1/sessions/{id}/scroll status=200 duration_ms="
        #expect(eventually(within: 10) { server.standardOutput.contains(expected) })
        let line = server.standardOutput.split(separator: "\n").first { $0.contains(expected) } ?? ""
        #expect(line.contains(" session=\(id.prefix(8)) client=127.0.0.1 trace_id="), "\(line)")
        server.signal(SIGTERM)
        #expect(server.waitForExit(within: 10) == 0)
    }

    /// A graceful stop writes every buffered line: the last request before
    /// SIGTERM is in the log, ahead of the stop lines.
    @Test func lastRequestBeforeStopIsLogged() throws {
        let server = try ProcessLifecycleTests.RunningServer(["--port", "0"])
        _ = try server.waitUntilListening()
        let client = try TestHTTPClient(port: server.port)
        let id = try #require(try client.request("POST", "/v1/sessions").json["id"] as? String)
        for offset in [0, 300, 0] {
            try client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": \#(offset)}"#)
        }
        try client.request("DELETE", "/v1/sessions/\(id)")
        server.signal(SIGTERM)
        #expect(server.waitForExit(within: 10) == 0)
        usleep(100_000)
        let lines = server.standardOutput.split(separator: "\n").map(String.init)
        let requests = lines.filter { $0.contains(" info request ") }
        #expect(requests.count == 5)
        let last = try #require(requests.last)
        #expect(last.contains(" method=DELETE route=/v1/sessions/{id} status=204 "))
        #expect(last.contains(" session=\(id.prefix(8)) client=127.0.0.1 trace_id="), "\(last)")
        let lastIndex = try #require(lines.lastIndex(of: last))
        let stopped = try #require(lines.firstIndex { $0.hasSuffix(" info topchrome stopped") })
        #expect(lastIndex < stopped)
    }

    /// A session's creation carries its short id, so its later lines can be
    /// traced back to it; `bytes` is what went out as body, none for 304 and HEAD.
    @Test func accessLogNamesNewSessionsAndCountsOnlyBodiesSent() throws {
        let server = try ProcessLifecycleTests.RunningServer(["--port", "0"])
        _ = try server.waitUntilListening()
        let client = try TestHTTPClient(port: server.port)
        let id = try #require(try client.request("POST", "/v1/sessions").json["id"] as? String)
        let full = try client.request("GET", "/v1/sessions/\(id)")
        let notModified = try client.request("GET", "/v1/sessions/\(id)", headers: [("If-None-Match", full.header("ETag") ?? "")])
        let head = try client.request("HEAD", "/v1/sessions/\(id)")
        #expect(notModified.status == 304 && head.status == 200)
        server.signal(SIGTERM)
        #expect(server.waitForExit(within: 10) == 0)
        usleep(100_000)
        let requests = server.standardOutput.split(separator: "\n").filter { $0.contains(" info request ") }
        #expect(requests.count == 4)
        guard requests.count == 4 else { return }
        #expect(requests[0].contains(" method=POST route=/v1/sessions status=201 "))
        #expect(requests[0].contains(" session=\(id.prefix(8)) client=127.0.0.1 trace_id="), "\(requests[0])")
        #expect(requests[1].contains(" status=200 ") && requests[1].contains(" bytes=\(full.body.count) "))
        #expect(full.body.count > 0)
        #expect(requests[2].contains(" status=304 ") && requests[2].contains(" bytes=0 "), "\(requests[2])")
        #expect(requests[3].contains(" method=HEAD ") && requests[3].contains(" bytes=0 "), "\(requests[3])")
    }

    @Test func warnLevelDropsRequestLines() throws {
        let server = try ProcessLifecycleTests.RunningServer(["--port", "0", "--log-level", "warn"])
        _ = try server.waitUntilListening()
        try TestHTTPClient(port: server.port).request("GET", "/healthz")
        server.signal(SIGTERM)
        #expect(server.waitForExit(within: 10) == 0)
        usleep(100_000)
        let output = server.standardOutput
        #expect(output.contains("listening on"), "lifecycle lines are always written")
        #expect(!output.contains(" request "))
    }

    /// Behind a trusted proxy the access log names the client it forwarded
    /// for (the right-most address not itself trusted), as nginx's realip
    /// does; from anyone else `X-Forwarded-For` is not believed.
    @Test func accessLinesNameTheClientBehindTrustedProxies() throws {
        func clients(trusting proxies: [String]) throws -> [String] {
            let server = try ProcessLifecycleTests.RunningServer(["--port", "0"] + proxies.flatMap { ["--trusted-proxy", $0] })
            _ = try server.waitUntilListening()
            let client = try TestHTTPClient(port: server.port)
            for forwarded in ["203.0.113.9", "198.51.100.1, 203.0.113.9, 10.0.0.2", "2001:db8::7", "not-an-address", ""] {
                try client.request("GET", "/healthz", headers: forwarded.isEmpty ? [] : [("X-Forwarded-For", forwarded)])
            }
            server.signal(SIGTERM)
            #expect(server.waitForExit(within: 10) == 0)
            return server.log.split(separator: "\n").filter { $0.contains(" info request ") }
                .map { String($0.split(separator: " client=").last?.split(separator: " ").first ?? "") }
        }
        #expect(try clients(trusting: ["127.0.0.1", "10.0.0.0/8"]) == ["203.0.113.9", "203.0.113.9", "2001:db8::7", "127.0.0.1", "127.0.0.1"])
        #expect(try clients(trusting: []) == Array(repeating: "127.0.0.1", count: 5), "the header alone proves nothing")
        #expect(try clients(trusting: ["192.0.2.0/24"]) == Array(repeating: "127.0.0.1", count: 5), "the peer is not a trusted proxy")
    }

    /// A request for a path where nothing lives is logged with that path,
    /// cut short and escaped, so an operator sees what was asked.
    @Test func unmatchedPathsAreLoggedEscapedAndBounded() throws {
        let server = try ProcessLifecycleTests.RunningServer(["--port", "0", "--log-format", "json"])
        _ = try server.waitUntilListening()
        let client = try TestHTTPClient(port: server.port)
        try client.request("GET", "/v2/\"q\"\\ü?x=1")
        try client.request("GET", "/" + String(repeating: "a", count: 300))
        try client.request("GET", "/healthz")
        server.signal(SIGTERM)
        #expect(server.waitForExit(within: 10) == 0)
        let requests = try server.log.split(separator: "\n")
            .compactMap { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            .filter { $0["msg"] as? String == "request" }
        #expect(requests.map { $0["path"] as? String } == ["/v2/%22q%22%5C%C3%BC", "/" + String(repeating: "a", count: 127) + "...", nil])
        // Ids as JSON strings too: made ones are 32 hex digits, one per request.
        let ids = requests.compactMap { $0["request_id"] as? String }
        #expect(ids.count == 3 && Set(ids).count == 3 && ids.allSatisfy { $0.utf8.count == 32 }, "\(ids)")
        #expect(requests.map { $0["trace_id"] as? String } == ids.map { $0 as String? })
    }

    /// The start line names the store, how many sessions came back, and
    /// whether the last stop was clean.
    @Test func theStartLineNamesTheStoreAndRestoredSessions() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("start-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let state = folder.appendingPathComponent("state.jsonl").path
        let first = try ProcessLifecycleTests.RunningServer(["--port", "0", "--state-file", state])
        #expect(try first.waitUntilListening().contains(" store=memory sessions_restored=0 last_stop=none "))
        let client = try TestHTTPClient(port: first.port)
        for _ in 0..<3 { try client.request("POST", "/v1/sessions") }
        first.signal(SIGTERM)
        #expect(first.waitForExit(within: 10) == 0)
        let second = try ProcessLifecycleTests.RunningServer(["--port", "0", "--state-file", state])
        let line = try second.waitUntilListening()
        #expect(line.contains(" store=memory sessions_restored=3 last_stop=clean snapshot_age_ms="), "\(line)")
        #expect(line.hasSuffix(" sessions_from_journal=0 sessions_removed_by_journal=0 records_dropped=0"), "\(line)")
        second.signal(SIGTERM)
        #expect(second.waitForExit(within: 10) == 0)
        let plain = try ProcessLifecycleTests.RunningServer(["--port", "0"])
        #expect(try plain.waitUntilListening().hasSuffix(" store=memory"))
        plain.signal(SIGTERM)
        _ = plain.waitForExit(within: 10)
    }
}
