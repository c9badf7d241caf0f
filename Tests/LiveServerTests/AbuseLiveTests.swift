import Foundation
import Testing

/// Limits that hold when clients misbehave: idle and trickling connections,
/// one client taking every connection, oversized headers and bodies, a full store.
@Suite struct AbuseLiveTests {
    /// 500 idle connections and 500 that send their request a byte at a time:
    /// an ordinary client is still answered at once. (From one address,
    /// with the per-address cap off: `SlowClientsLiveTests` has it on.)
    @Test func idleAndTricklingConnectionsDoNotStarveOthers() throws {
        let server = try LiveServer { $0.limits.maxConnectionsPerIP = 0 }
        var idle: [TestHTTPClient] = []
        var tricklers: [TestHTTPClient] = []
        for _ in 0..<500 { idle.append(try server.client()) }
        for _ in 0..<500 {
            let client = try server.client()
            try client.send(raw: Array("G".utf8))
            tricklers.append(client)
        }
        for byte in "ET /hea".utf8 {
            for client in tricklers { try client.send(raw: [byte]) }
        }
        let ordinary = try server.client()
        ordinary.setReadTimeout(seconds: 2)
        #expect(try ordinary.request("GET", "/healthz").status == 200)
        #expect(try ordinary.json("POST", "/v1/sessions", "{}").status == 201)
        _ = idle
    }

    @Test func idleConnectionsAreClosedAfterTheIdleTimeout() throws {
        let server = try LiveServer { $0.http.idleTimeout = 1 }
        let client = try server.client()
        #expect(try client.request("GET", "/healthz").status == 200)
        client.setReadTimeout(seconds: 4)
        #expect(client.isClosedByServer(), "closed by the server after about a second idle")
    }

    @Test func oneAddressCannotTakeEveryConnection() throws {
        // Memory only: a Redis-backed server is first probed for readiness,
        // and that connection may not be seen closed yet when this counts.
        let server = try LiveServer(memoryOnly: true) { $0.limits.maxConnectionsPerIP = 4 }
        let held = try (0..<4).map { _ in try server.client() }
        for client in held { #expect(try client.request("GET", "/healthz").status == 200) }
        let extra = try server.client()
        extra.setReadTimeout(seconds: 2)
        #expect(extra.isClosedByServer(), "the fifth connection from 127.0.0.1 is closed at once")
    }

    /// Thousands of refused requests (431, 413, 503) leave the server's
    /// memory where it was: nothing of them is kept.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["ASAN_OPTIONS"] == nil,
                   "AddressSanitizer holds freed memory back on purpose, so RSS says nothing there"))
    func refusalsKeepMemoryBounded() throws {
        // Hundreds of creations from one address: without the creation
        // limit, which would answer 429 before the store's 503.
        let server = try ProcessLifecycleTests.RunningServer(["--port", "0", "--max-sessions", "10", "--log-level", "warn",
                                                              "--create-rate", "0"])
        _ = try server.waitUntilListening()
        let client = try TestHTTPClient(port: server.port)
        for _ in 0..<10 { #expect(try client.request("POST", "/v1/sessions").status == 201) }
        func rss() -> Int {
            let status = (try? String(contentsOfFile: "/proc/\(server.process.processIdentifier)/status", encoding: .utf8)) ?? ""
            let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
            return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
        }
        // Warm up each path once, then measure.
        #expect(try client.request("POST", "/v1/sessions").status == 503)
        let before = rss()
        let body = [UInt8](repeating: UInt8(ascii: " "), count: 1 << 20)
        for round in 0..<300 {
            #expect(try client.request("POST", "/v1/sessions").status == 503)
            if round % 3 == 0 {
                #expect(try client.request("POST", "/v1/sessions", headers: [("Content-Type", "application/json")], body: body).status == 413)
            }
            let big = try TestHTTPClient(port: server.port)
            #expect(try big.request("GET", "/healthz", headers: [("X-Padding", String(repeating: "a", count: 20_000))]).status == 431)
        }
        let growth = rss() - before
        #expect(growth < 4096, "RSS grew by \(growth) KiB over 300 rounds of refusals")
        server.signal(SIGTERM)
        #expect(server.waitForExit(within: 10) == 0)
    }
}
