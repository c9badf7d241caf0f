import Foundation
import Testing
import TopChromeTesting

/// A watched session is in use: an app idle on one screen keeps its event
/// stream or long-poll open, and must not lose its session under it. Its
/// idle time starts when its last watcher leaves. Runs on both stores
/// (`TOPCHROME_TEST_STORE=redis` for Redis, which drops keys by TTL).
@Suite struct WatchedExpiryLiveTests {
    /// Long enough that the session would have expired several times over:
    /// a 2 s timeout, counted in ticks of ≈ 1.15 s, expires by ≈ 3.5 s.
    static let watchedFor: UInt32 = 6

    @Test func aSessionWithAnOpenStreamDoesNotExpire() throws {
        let server = try LiveServer { $0.sessions.ttl = 2; $0.sessions.heartbeatSeconds = 1 }
        let id = try server.createSession()
        var stream: EventStreamClient? = try EventStreamClient(port: server.port, sessionID: id)
        _ = try stream?.nextState()
        sleep(Self.watchedFor)
        #expect(server.service.watcherCount == 1)
        // Read through the stream first: a GET would count as a use.
        stream = nil
        // The next heartbeat finds the client gone and ends the watch.
        #expect(eventually { server.service.watcherCount == 0 })
        // Unused for six seconds, but watched until now: its idle time has just begun.
        #expect(try server.client().request("GET", "/v1/sessions/\(id)").status == 200)
    }

    /// Nothing reaches the stream but heartbeats: no `deleted` event.
    @Test func aStreamOfAnIdleSessionHearsNoRemoval() throws {
        let server = try LiveServer { $0.sessions.ttl = 2; $0.sessions.heartbeatSeconds = 1 }
        let id = try server.createSession()
        let stream = try EventStreamClient(port: server.port, sessionID: id)
        _ = try stream.nextState()
        let deadline = Date().addingTimeInterval(Double(Self.watchedFor))
        var heartbeats = 0
        while Date() < deadline, let event = try stream.next() {
            #expect(event.event != "deleted", "the session expired under its watcher")
            if event.comment == "heartbeat" { heartbeats += 1 }
        }
        #expect(heartbeats >= 4)
        #expect(!stream.ended)
        #expect(try server.client().request("GET", "/v1/sessions/\(id)").status == 200)
    }

    @Test func aSessionWithAWaitingLongPollDoesNotExpire() throws {
        let server = try LiveServer { $0.sessions.ttl = 2 }
        let id = try server.createSession()
        let client = try server.client()
        let etag = try #require(try client.request("GET", "/v1/sessions/\(id)").header("ETag"))
        let waited = try client.request("GET", "/v1/sessions/\(id)",
                                        headers: [("If-None-Match", etag), ("Prefer", "wait=\(Self.watchedFor)")])
        #expect(waited.status == 304, "\(waited.status) \(waited.text)")
        #expect(eventually { server.service.watcherCount == 0 })
        #expect(try client.request("GET", "/v1/sessions/\(id)").status == 200)
    }
}
