import Foundation
import Testing
import TopChromeTesting

/// Server-Sent Events and long-polls over loopback against a real server.
@Suite struct WatchingLiveTests {
    let server: LiveServer

    init() throws {
        server = try LiveServer { $0.sessions.heartbeatSeconds = 1 }
    }

    @Test func watcherSeesEveryChangeInOrder() throws {
        let id = try server.createSession()
        let stream = try EventStreamClient(port: server.port, sessionID: id)
        #expect(stream.head.status == 200)
        #expect(stream.head.header("Content-Type") == "text/event-stream")
        #expect(stream.head.header("Cache-Control") == "no-store")
        let retry = try #require(try stream.next())
        #expect(Int(retry.retry ?? "") ?? 0 > 0, "tells browsers when to reconnect")

        let first = try #require(try stream.nextState())
        #expect(versionOf(first.id) == 1)
        #expect(first.state["isRevealed"] as? Bool == true)

        let other = try server.client()
        for step in 1...10 {
            try other.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": \#(step % 2 == 1 ? 300 : 0)}"#)
        }
        for version in 2...11 {
            let event = try #require(try stream.nextState())
            #expect(versionOf(event.id) == UInt64(version))
            #expect(event.state["version"] as? Int == version)
            #expect(event.state["isRevealed"] as? Bool == (version % 2 == 1))
            #expect(event.state["id"] as? String == id)
        }
    }

    @Test func lastEventIDSkipsWhatTheClientHas() throws {
        let id = try server.createSession()
        let first = try server.etag(id).dropFirst().dropLast()
        let other = try server.client()
        try other.json("PUT", "/v1/sessions/\(id)/inset", #"{"inset": 59}"#)
        let second = try server.etag(id).dropFirst().dropLast()

        let current = try EventStreamClient(port: server.port, sessionID: id, headers: [("Last-Event-ID", String(second))])
        let behind = try EventStreamClient(port: server.port, sessionID: id, headers: [("Last-Event-ID", String(first))])
        #expect(versionOf(try behind.nextState()?.id) == 2, "behind: gets the current state")

        try other.json("PUT", "/v1/sessions/\(id)/inset", #"{"inset": 47}"#)
        let next = try #require(try current.nextState())
        #expect(versionOf(next.id) == 3, "up to date: nothing resent, the next change comes first")
        #expect(next.state["inset"] as? Int == 47)
    }

    @Test func heartbeatsKeepTheStreamAlive() throws {
        let id = try server.createSession()
        let stream = try EventStreamClient(port: server.port, sessionID: id)
        _ = try stream.nextState()
        let heartbeat = try #require(try stream.next())
        #expect(heartbeat.comment == "heartbeat")
        #expect(heartbeat.event == nil)
    }

    @Test func deletedSessionEndsTheStream() throws {
        let id = try server.createSession()
        let stream = try EventStreamClient(port: server.port, sessionID: id)
        _ = try stream.nextState()
        #expect(try server.client().request("DELETE", "/v1/sessions/\(id)").status == 204)
        var deleted: ServerSentEvent?
        while deleted == nil, let event = try stream.next() {
            if event.event == "deleted" { deleted = event }
        }
        #expect(deleted?.data?.contains(id) == true)
        #expect(try stream.next() == nil, "the stream ends")
        #expect(eventually { server.service.watcherCount == 0 })
    }

    @Test func clientThatLeavesIsDropped() throws {
        let id = try server.createSession()
        var stream: EventStreamClient? = try EventStreamClient(port: server.port, sessionID: id)
        _ = try stream?.nextState()
        #expect(server.service.watcherCount == 1)
        stream = nil  // closes the socket without a word
        #expect(eventually { server.service.watcherCount == 0 }, "found by the next heartbeat and freed")
    }

    @Test func unknownSessionAndWrongMethod() throws {
        let client = try server.client()
        let nobody = String(repeating: "a", count: 32)
        #expect(try client.request("GET", "/v1/sessions/\(nobody)/events").status == 404)
        let id = try server.createSession()
        let wrong = try client.request("POST", "/v1/sessions/\(id)/events")
        #expect(wrong.status == 405)
        #expect(wrong.header("Allow") == "GET, HEAD")
        let head = try client.request("HEAD", "/v1/sessions/\(id)/events")
        #expect(head.status == 200)
        #expect(head.header("Content-Type") == "text/event-stream")
        #expect(server.service.watcherCount == 0, "HEAD opens no stream")
    }

    @Test func watcherLimits() throws {
        let limited = try LiveServer {
            $0.limits.maxWatchers = 3
            $0.limits.maxWatchersPerSession = 2
        }
        let id = try limited.createSession()
        let a = try EventStreamClient(port: limited.port, sessionID: id)
        let b = try EventStreamClient(port: limited.port, sessionID: id)
        let refused = try limited.client().request("GET", "/v1/sessions/\(id)/events")
        #expect(refused.status == 503)
        #expect(refused.header("Content-Type") == "application/problem+json")
        #expect(refused.header("Retry-After") != nil)

        let other = try limited.createSession()
        let c = try EventStreamClient(port: limited.port, sessionID: other)
        #expect(c.head.status == 200)
        let overTotal = try limited.client().request("GET", "/v1/sessions/\(other)", headers: [("If-None-Match", try limited.etag(other)), ("Prefer", "wait=5")])
        #expect(overTotal.status == 503, "long-polls count as watchers")
        _ = (a, b)
    }

    @Test func longPollWakesOnChange() throws {
        let id = try server.createSession()
        let server = self.server
        let waiting = BackgroundRequest {
            try server.client().request("GET", "/v1/sessions/\(id)", headers: [("If-None-Match", try server.etag(id)), ("Prefer", "wait=30")])
        }
        #expect(eventually { server.service.watcherCount == 1 })
        try server.client().json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 500}"#)
        let response = try waiting.value
        #expect(response.status == 200)
        #expect(response.etagVersion == 2)
        #expect(response.header("Preference-Applied") == "wait=30")
        #expect(try response.json["isRevealed"] as? Bool == false)
        #expect(eventually { server.service.watcherCount == 0 })
    }

    @Test func longPollTimesOutWith304() throws {
        let id = try server.createSession()
        let response = try server.client().request("GET", "/v1/sessions/\(id)",
                                                   headers: [("If-None-Match", try server.etag(id)), ("Prefer", "wait=1")])
        #expect(response.status == 304)
        #expect(response.etagVersion == 1)
        #expect(response.header("Preference-Applied") == "wait=1")
        #expect(eventually { server.service.watcherCount == 0 })
    }

    /// A long-poll leaves nothing behind on its connection: the next request
    /// there is answered for itself, not with the wait's answer.
    @Test func requestAfterALongPollOnTheSameConnectionIsAnsweredForItself() throws {
        let id = try server.createSession()
        let client = try server.client()
        let waited = try client.request("GET", "/v1/sessions/\(id)", headers: [("If-None-Match", try server.etag(id)), ("Prefer", "wait=1")])
        #expect(waited.status == 304)
        let scrolled = try client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 300}"#)
        #expect(scrolled.status == 200)
        #expect(try scrolled.json["version"] as? Int == 2)
    }

    @Test func timedOutLongPollNamesTheCurrentVersion() throws {
        // The client knows states 1 and 2, so the change to 2 does not end the wait. Only the
        // memory store's next ETag is known before the state is made (its tag is the epoch).
        guard let epoch = server.service.backend.memoryStore.map({ String(decoding: $0.epoch.hex, as: UTF8.self) }) else { return }
        let id = try server.createSession()
        let server = self.server
        let waiting = BackgroundRequest {
            try server.client().request("GET", "/v1/sessions/\(id)", headers: [("If-None-Match", "\"1.\(epoch)\", \"2.\(epoch)\""), ("Prefer", "wait=5")])
        }
        #expect(eventually { server.service.watcherCount == 1 })
        try server.client().json("PUT", "/v1/sessions/\(id)/inset", #"{"inset": 3}"#)
        let response = try waiting.value
        #expect(response.status == 304)
        #expect(response.etagVersion == 2)
    }

    @Test func longWaitsAreCapped() throws {
        let capped = try LiveServer { $0.limits.maxWaitSeconds = 1 }
        let id = try capped.createSession()
        let response = try capped.client().request("GET", "/v1/sessions/\(id)", headers: [("If-None-Match", try capped.etag(id)), ("Prefer", "wait=600")])
        #expect(response.status == 304)
        #expect(response.header("Preference-Applied") == "wait=1")
    }

    @Test func preferWaitForms() throws {
        let id = try server.createSession()
        for prefer in ["wait=1", "WAIT = 1", "wait=\"1\"", "respond-async, wait=1; x=y"] {
            let response = try server.client().request("GET", "/v1/sessions/\(id)", headers: [("If-None-Match", try server.etag(id)), ("Prefer", prefer)])
            #expect(response.status == 304)
            #expect(response.header("Preference-Applied") == "wait=1", "\(prefer)")
        }
    }

    @Test func longPollAnswersAtOnceWhenAlreadyChanged() throws {
        let id = try server.createSession()
        let client = try server.client()
        let etag = try server.etag(id)
        try client.json("PUT", "/v1/sessions/\(id)/inset", #"{"inset": 10}"#)
        let response = try client.request("GET", "/v1/sessions/\(id)", headers: [("If-None-Match", etag), ("Prefer", "wait=30")])
        #expect(response.status == 200)
        #expect(response.etagVersion == 2)
        #expect(response.header("Preference-Applied") == nil, "no wait happened")
    }

    @Test func longPollOnDeletedSessionIs404() throws {
        let id = try server.createSession()
        let server = self.server
        let waiting = BackgroundRequest {
            try server.client().request("GET", "/v1/sessions/\(id)", headers: [("If-None-Match", try server.etag(id)), ("Prefer", "wait=30")])
        }
        #expect(eventually { server.service.watcherCount == 1 })
        try server.client().request("DELETE", "/v1/sessions/\(id)")
        #expect(try waiting.value.status == 404)
    }

    /// Watchers hold no thread: with one server thread and hundreds of open
    /// streams and long-polls, an ordinary request is still answered.
    @Test func oneThreadServesRequestsBesideHundredsOfWatchers() throws {
        let single = try LiveServer {
            $0.http.threads = 1
            $0.sessions.heartbeatSeconds = 60
            $0.limits.maxWatchersPerSession = 500
            $0.limits.maxConnectionsPerIP = 0  // every client is 127.0.0.1
        }
        let id = try single.createSession()
        let etag = try single.etag(id)
        var streams: [EventStreamClient] = []
        var polls: [TestHTTPClient] = []
        for _ in 0..<250 {
            streams.append(try EventStreamClient(port: single.port, sessionID: try single.createSession()))
            let poll = try single.client()
            try poll.send(raw: Array("GET /v1/sessions/\(id) HTTP/1.1\r\nHost: x\r\nIf-None-Match: \(etag)\r\nPrefer: wait=60\r\n\r\n".utf8))
            polls.append(poll)
        }
        #expect(eventually { single.service.watcherCount == 500 })
        let client = try single.client()
        client.setReadTimeout(seconds: 2)
        #expect(try client.request("GET", "/healthz").status == 200)
        // One change wakes all 250 long-polls of that session.
        try client.json("PUT", "/v1/sessions/\(id)/inset", #"{"inset": 1}"#)
        for poll in polls {
            #expect(try poll.readResponse().status == 200)
        }
        #expect(eventually { single.service.watcherCount == 250 })
    }

    @Test func stoppingEndsStreamsAndLongPolls() throws {
        let stopping = try LiveServer()
        let id = try stopping.createSession()
        let stream = try EventStreamClient(port: stopping.port, sessionID: id)
        _ = try stream.nextState()
        let waiting = BackgroundRequest {
            try stopping.client().request("GET", "/v1/sessions/\(id)", headers: [("If-None-Match", try stopping.etag(id)), ("Prefer", "wait=30")])
        }
        #expect(eventually { stopping.service.watcherCount == 2 })
        let stoppedCleanly = stopping.service.stop().requestsFinished
        #expect(stoppedCleanly)
        #expect(try waiting.value.status == 503)
        while try stream.next() != nil {}
        #expect(stream.ended)
    }
}
