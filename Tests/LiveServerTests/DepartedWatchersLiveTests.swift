import Foundation
import Testing
import TopChromeTesting

/// A watcher whose client closed its connection frees its place (and its
/// descriptor) within a second, though libmicrohttpd does not look at a
/// suspended connection's socket. Before, a long-poll held both for its
/// whole wait and a stream until its next heartbeat.
@Suite struct DepartedWatchersLiveTests {
    @Test func longPollsWhoseClientsLeftFreeTheirPlaces() throws {
        let server = try LiveServer { $0.limits.maxWatchers = 50 }
        let id = try server.createSession()
        let etag = try server.etag(id)
        var polls: [TestHTTPClient] = []
        for _ in 0..<50 {
            let client = try server.client()
            try client.send(raw: Array("GET /v1/sessions/\(id) HTTP/1.1\r\nHost: x\r\nPrefer: wait=60\r\nIf-None-Match: \(etag)\r\n\r\n".utf8))
            polls.append(client)
        }
        #expect(eventually { server.service.watcherCount == 50 })
        let full = try server.client().request("GET", "/v1/sessions/\(id)", headers: [("Prefer", "wait=60"), ("If-None-Match", etag)])
        #expect(full.status == 503, "every place taken")
        let refusedWatcher = try server.client()
        #expect(try refusedWatcher.request("GET", "/v1/sessions/\(id)/events").status == 503)
        refusedWatcher.setReadTimeout(seconds: 5)
        #expect(refusedWatcher.isClosedByServer(), "a refused watcher holds no connection")
        let clock = ContinuousClock()
        let left = clock.now
        polls.removeAll()  // every client closes at once
        #expect(eventually(within: 3) { server.service.watcherCount == 0 })
        let freed = clock.now - left
        #expect(freed < .seconds(1.5 * testTimeScale), "freed in \(freed)")
        #expect(eventually { server.service.connections.openConnections <= 2 }, "their connections closed too")
        #expect(try server.client().request("GET", "/metrics").text.contains("\ntopchrome_watchers 0\n"))
        // Another client gets its watcher now: it waits (and the session changes).
        let another = try server.client()
        try another.send(raw: Array("GET /v1/sessions/\(id) HTTP/1.1\r\nHost: x\r\nPrefer: wait=60\r\nIf-None-Match: \(etag)\r\n\r\n".utf8))
        #expect(eventually { server.service.watcherCount == 1 })
        #expect(try server.client().json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 500}"#).status == 200)
        #expect(try another.readResponse().status == 200)
    }

    @Test func eventStreamsWhoseClientsLeftFreeTheirPlaces() throws {
        // Heartbeats far apart: the departure is not noticed through them.
        let server = try LiveServer { $0.sessions.heartbeatSeconds = 3600 }
        let id = try server.createSession()
        var streams: [TestHTTPClient] = []
        for _ in 0..<50 {
            let client = try server.client()
            try client.send(raw: Array("GET /v1/sessions/\(id)/events HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
            #expect(try client.readHead().status == 200)
            streams.append(client)
        }
        #expect(eventually { server.service.watcherCount == 50 })
        let clock = ContinuousClock()
        let left = clock.now
        streams.removeAll()
        #expect(eventually(within: 3) { server.service.watcherCount == 0 })
        let freed = clock.now - left
        #expect(freed < .seconds(1.5 * testTimeScale), "freed in \(freed)")
    }

    /// A client that sent its request and the end of its stream has left
    /// as far as the server can tell (nginx's 499): its place is freed, and
    /// what it still reads is the end of the connection, not a made-up answer.
    @Test func aHalfClosedLongPollEndsWithoutAnAnswer() throws {
        let server = try LiveServer()
        let id = try server.createSession()
        let etag = try server.etag(id)
        let poll = try server.client()
        try poll.send(raw: Array("GET /v1/sessions/\(id) HTTP/1.1\r\nHost: x\r\nPrefer: wait=60\r\nIf-None-Match: \(etag)\r\n\r\n".utf8))
        #expect(eventually { server.service.watcherCount == 1 })
        poll.finishSending()
        #expect(eventually(within: 3) { server.service.watcherCount == 0 })
        poll.setReadTimeout(seconds: 5)
        #expect(poll.isClosedByServer(), "the end of the stream, with no status line before it")
    }
}
