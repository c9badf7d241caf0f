import Foundation
import RedisTestSupport
import Testing
import TopChromeServer
import TopChromeTesting

/// What a replica does when Redis is not there, goes away, or comes back.
@Suite(.serialized) struct RedisOutageLiveTests {
    @Test func aReplicaStartsWithoutRedisAndServesOnceItComes() throws {
        let redis = try RedisServer()
        redis.stop()
        let server = try LiveServer(store: .redis(.seeds([redis.node])), keyPrefix: "outage:")
        #expect(try server.client().request("GET", "/healthz").status == 200)
        let ready = try server.client().request("GET", "/readyz")
        #expect(ready.status == 503)
        #expect(ready.header("Content-Type") == "application/problem+json")
        #expect(ready.text.contains("session store"))
        let refused = try server.client().json("POST", "/v1/sessions", "")
        #expect(refused.status == 503)
        #expect(refused.header("Retry-After") != nil)
        #expect(refused.header("Content-Type") == "application/problem+json")
        #expect(try server.client().request("GET", "/metrics").text.contains("\ntopchrome_store_up 0\n"))

        try redis.restart()
        #expect(server.waitUntilReady())
        #expect(try server.client().json("POST", "/v1/sessions", "").status == 201)
        #expect(try server.client().request("GET", "/metrics").text.contains("\ntopchrome_store_up 1\n"))
    }

    /// Redis's address and errors are for operators: with a bearer token,
    /// `/readyz` tells them only to a request that carries it.
    @Test func readinessDetailsNeedTheToken() throws {
        let redis = try RedisServer()
        redis.stop()
        let server = try LiveServer(store: .redis(.seeds([redis.node])), keyPrefix: "outage:") { $0.auth.token = "s3cret-token" }
        let anyone = try server.client().request("GET", "/readyz")
        #expect(anyone.status == 503)
        #expect(anyone.header("Retry-After") == "1")
        #expect(try anyone.json["detail"] as? String == "The session store cannot be reached.")
        #expect(!anyone.text.contains("127.0.0.1"), "\(anyone.text)")
        let operatorView = try server.client().request("GET", "/readyz", headers: [("Authorization", "Bearer s3cret-token")])
        #expect(operatorView.status == 503)
        #expect(operatorView.text.contains("127.0.0.1:\(redis.port)"), "\(operatorView.text)")
    }

    @Test func aNewWatcherGets503WithinTheTimeoutWhileRedisIsGone() throws {
        let redis = try RedisServer()
        let server = try LiveServer(store: .redis(.seeds([redis.node])), keyPrefix: "watchless:") { $0.redis.timeout = 0.5 }
        #expect(server.waitUntilReady())
        let id = try server.createSession()
        let etag = try server.etag(id)
        redis.stop()
        for headers in [[], [("If-None-Match", etag), ("Prefer", "wait=30")]] {
            let started = Date()
            let answer = try server.client().request(
                "GET", headers.isEmpty ? "/v1/sessions/\(id)/events" : "/v1/sessions/\(id)", headers: headers)
            #expect(answer.status == 503)
            #expect(answer.header("Retry-After") != nil)
            #expect(Date().timeIntervalSince(started) < 3, "not held until Redis comes back")
        }
        #expect(eventually { server.service.watcherCount == 0 })
    }

    @Test func aFullRedisRefusesChangesWith503AndLosesNothing() throws {
        let redis = try RedisServer(["--maxmemory-policy", "noeviction"])
        let server = try LiveServer(store: .redis(.seeds([redis.node])), keyPrefix: "full:")
        #expect(server.waitUntilReady())
        let id = try server.createSession(inset: 12)
        try redisCLI(port: redis.port, "CONFIG", "SET", "maxmemory", "1")
        let refused = try server.client().json("POST", "/v1/sessions", "")
        #expect(refused.status == 503)
        #expect(refused.header("Content-Type") == "application/problem+json")
        #expect(refused.header("Retry-After") != nil)
        #expect(refused.text.contains("full"))
        try redisCLI(port: redis.port, "CONFIG", "SET", "maxmemory", "0")
        let kept = try server.client().request("GET", "/v1/sessions/\(id)")
        #expect(kept.status == 200)
        #expect(try kept.json["inset"] as? Double == 12)
        #expect(try server.client().json("POST", "/v1/sessions", "").status == 201)
    }

    @Test func requestsGet503WithinTheTimeoutWhileRedisIsGoneAndStreamsResume() throws {
        // Persistence on, so the session outlives the restart.
        let redis = try RedisServer(["--appendonly", "yes", "--appendfsync", "always"])
        let server = try LiveServer(store: .redis(.seeds([redis.node])), keyPrefix: "lost:") {
            $0.redis.timeout = 0.5
            $0.sessions.heartbeatSeconds = 1
        }
        #expect(server.waitUntilReady())
        let id = try server.createSession()
        let stream = try EventStreamClient(port: server.port, sessionID: id)
        #expect(versionOf(try stream.nextState()?.id) == 1)

        redis.signal(SIGSTOP)  // there, but silent: the worst case for a client
        let started = Date()
        let stalled = try server.client().json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 300}"#)
        let waited = Date().timeIntervalSince(started)
        #expect(stalled.status == 503)
        #expect(stalled.header("Retry-After") != nil)
        #expect(stalled.text.contains("may have been made"), "a timed-out change may have happened")
        #expect(waited < 3, "answered within the timeout, not hung (took \(waited) s)")

        redis.signal(SIGCONT)
        redis.stop()
        #expect(try server.client().json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 300}"#).status == 503)
        try redis.restart()
        #expect(server.waitUntilReady())
        // The change made before the stall may or may not have landed;
        // this one does, and the stream (still open) carries it.
        let after = try server.client().json("PUT", "/v1/sessions/\(id)/inset", #"{"inset": 77}"#)
        #expect(after.status == 200)
        let version = try #require(try after.json["version"] as? Int)
        var last: [String: Any] = [:]
        while let event = try stream.nextState() {
            last = event.state
            if event.state["version"] as? Int == version { break }
        }
        #expect(last["inset"] as? Double == 77)
        #expect(!stream.ended)
    }
    /// A long-poll already waiting when Redis goes away can no longer hear
    /// changes: it gets 503 as every request does then, not a 304 at the
    /// end of its wait built from the state it heard last.
    @Test func aWaitingLongPollGets503WhenRedisGoesAway() throws {
        let redis = try RedisServer()
        let server = try LiveServer(store: .redis(.seeds([redis.node])), keyPrefix: "unheard:") { $0.redis.timeout = 0.5 }
        #expect(server.waitUntilReady())
        let id = try server.createSession()
        let poll = BackgroundRequest { [server] in
            try server.client().request("GET", "/v1/sessions/\(id)", headers: [("If-None-Match", try server.etag(id)), ("Prefer", "wait=4")])
        }
        #expect(eventually { server.service.watcherCount == 1 })
        redis.stop()
        let answer = try poll.value
        #expect(answer.status == 503, "\(answer.status) \(answer.text)")
        #expect(answer.header("Content-Type") == "application/problem+json")
        #expect(answer.header("Retry-After") != nil)
        #expect(eventually { server.service.watcherCount == 0 })
        #expect(eventually { server.service.backend.redisStore?.channelsHeld == 0 })
    }

    /// A create whose answer never came may have made a session whose id
    /// the client never got: it is told to create another, not to read it.
    @Test func aCreateThatTimedOutSaysWhatIsTrueForACreate() throws {
        let redis = try RedisServer()
        let server = try LiveServer(store: .redis(.seeds([redis.node])), keyPrefix: "lostcreate:") { $0.redis.timeout = 0.3 }
        #expect(server.waitUntilReady())
        redis.signal(SIGSTOP)
        defer { redis.signal(SIGCONT) }
        let answer = try server.client().json("POST", "/v1/sessions", "")
        #expect(answer.status == 503)
        #expect(answer.header("Retry-After") != nil)
        #expect(answer.text.contains("A session may have been created, but its id was lost with the answer: create another."),
                "\(answer.text)")
        #expect(!answer.text.contains("read the session"))
    }

    /// A read asked for no change: when Redis stops answering, it is not
    /// told that a change may have been made.
    @Test func aReadThatTimedOutSaysNothingChanged() throws {
        let redis = try RedisServer()
        let server = try LiveServer(store: .redis(.seeds([redis.node])), keyPrefix: "lostread:") { $0.redis.timeout = 0.3 }
        #expect(server.waitUntilReady())
        let id = try server.createSession()
        let etag = try server.etag(id)
        redis.signal(SIGSTOP)
        defer { redis.signal(SIGCONT) }
        let read = try server.client().request("GET", "/v1/sessions/\(id)")
        #expect(read.status == 503)
        #expect(read.header("Retry-After") != nil)
        #expect(read.text.contains("Redis did not answer in time"), "\(read.text)")
        #expect(read.text.contains("Nothing was changed."), "\(read.text)")
        #expect(!read.text.contains("may have been made"), "\(read.text)")
        let poll = try server.client().request("GET", "/v1/sessions/\(id)", headers: [("If-None-Match", etag), ("Prefer", "wait=2")])
        #expect(poll.status == 503)
        #expect(!poll.text.contains("may have been made"), "\(poll.text)")
    }

    /// A watcher's first state comes once the session's channel is live;
    /// while Redis is away it never is, and the watch gets 503 instead of
    /// waiting for Redis (a long-poll past its own wait, a stream with no answer at all).
    @Test func aWatchWhileRedisIsAwayGets503WithinTheTimeout() throws {
        let (server, watches) = try watchesAfterRedisStopped(redisTimeout: 0.5, keyPrefix: "watchless:")
        for (path, refused, waited) in watches {
            #expect(refused.status == 503, "\(path)")
            #expect(refused.header("Content-Type") == "application/problem+json")
            #expect(refused.header("Retry-After") != nil)
            #expect(waited < 3, "answered within the timeout, not when Redis comes back (took \(waited) s)")
        }
        #expect(eventually { server.service.watcherCount == 0 })
        #expect(server.service.backend.redisStore?.channelsHeld == 0)
    }

    /// A watch opened while Redis is known to be away is refused at once,
    /// as any other request is, not after waiting out `--redis-timeout` for
    /// a channel that cannot come.
    @Test func aWatchOpenedWhileRedisIsKnownAwayIsRefusedAtOnce() throws {
        let (server, watches) = try watchesAfterRedisStopped(redisTimeout: 5, keyPrefix: "away:")
        for (path, refused, waited) in watches {
            #expect(refused.status == 503, "\(path)")
            #expect(refused.header("Retry-After") != nil)
            #expect(refused.text.contains("no connection to Redis"), "\(refused.text)")
            #expect(waited < 2.5, "refused at once, not after the 5 s timeout (took \(waited) s)")
        }
        #expect(server.service.backend.redisStore?.channelsHeld == 0)
    }

    /// An event stream and a long-poll of a session, opened once the
    /// server's Redis is stopped and its readiness says so: each answer and
    /// how long it took.
    private func watchesAfterRedisStopped(redisTimeout: Double, keyPrefix: String) throws
        -> (LiveServer, [(path: String, response: ReceivedResponse, seconds: Double)]) {
        let redis = try RedisServer()
        let server = try LiveServer(store: .redis(.seeds([redis.node])), keyPrefix: keyPrefix) { $0.redis.timeout = redisTimeout }
        #expect(server.waitUntilReady())
        let id = try server.createSession()
        let etag = try server.etag(id)
        redis.stop()
        #expect(eventually { (try? server.client().request("GET", "/readyz").status) == 503 })
        return (server, try [[("Accept", "text/event-stream")], [("If-None-Match", etag), ("Prefer", "wait=5")]].map { headers in
            let path = headers.count == 1 ? "/v1/sessions/\(id)/events" : "/v1/sessions/\(id)"
            let started = Date()
            let response = try server.client().request("GET", path, headers: headers)
            return (path, response, Date().timeIntervalSince(started))
        })
    }
}
