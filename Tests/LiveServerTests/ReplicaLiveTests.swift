import Foundation
import Redis
import RedisTestSupport
import Testing
import TopChromeApp

/// Two replicas on one Redis act as one service: what one changes, the
/// other serves and its watchers see, in order, with the same versions.
@Suite struct ReplicaLiveTests {
    let redis: RedisServer
    let prefix = "replicas\(UInt32.random(in: 0...UInt32.max)):"
    let first: LiveServer
    let second: LiveServer

    init() throws {
        redis = try RedisServer()
        first = try LiveServer(store: .redis([redis.node]), keyPrefix: prefix)
        second = try LiveServer(store: .redis([redis.node]), keyPrefix: prefix)
        #expect(first.waitUntilReady() && second.waitUntilReady())
    }

    @Test func aSessionMadeOnOneReplicaIsServedByTheOther() throws {
        let id = try first.createSession(inset: 59)
        let read = try second.client().request("GET", "/v1/sessions/\(id)")
        #expect(read.status == 200)
        #expect(try read.json["inset"] as? Double == 59)
        #expect(read.header("ETag") == "\"1\"")

        let scrolled = try second.client().json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 300}"#)
        #expect(try scrolled.json["isRevealed"] as? Bool == false)
        #expect(try scrolled.json["version"] as? Int == 2)

        #expect(try second.client().request("DELETE", "/v1/sessions/\(id)").status == 204)
        #expect(try first.client().request("GET", "/v1/sessions/\(id)").status == 404)
    }

    @Test func aStreamOnOneReplicaSeesEveryChangeMadeThroughTheOther() throws {
        let id = try first.createSession()
        let stream = try EventStreamClient(port: second.port, sessionID: id)
        #expect(stream.head.status == 200)
        #expect(try stream.nextState()?.id == "1")
        let writer = try first.client()
        for step in 1...20 {
            let response = try writer.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": \#(step % 2 == 1 ? 300 : 0)}"#)
            #expect(response.status == 200)
        }
        for version in 2...21 {
            let event = try #require(try stream.nextState())
            #expect(event.id == String(version))
            #expect(event.state["isRevealed"] as? Bool == (version % 2 == 1))
        }
        #expect(try first.client().request("DELETE", "/v1/sessions/\(id)").status == 204)
        // The removal reaches the other replica's stream, which then ends.
        var sawDeleted = false
        while let event = try stream.next() {
            if event.event == "deleted" { sawDeleted = true }
        }
        #expect(sawDeleted)
    }

    @Test func aLongPollOnOneReplicaAnswersAChangeMadeThroughTheOther() throws {
        let id = try first.createSession()
        let poll = BackgroundRequest { [second] in
            try second.client().request("GET", "/v1/sessions/\(id)", headers: [("If-None-Match", "\"1\""), ("Prefer", "wait=10")])
        }
        #expect(eventually { second.service.watcherCount == 1 })
        #expect(try first.client().json("PUT", "/v1/sessions/\(id)/inset", #"{"inset": 100}"#).status == 200)
        let answer = try poll.value
        #expect(answer.status == 200)
        #expect(try answer.json["inset"] as? Double == 100)
        #expect(answer.header("ETag") == "\"2\"")
    }

    @Test func aLongPollForAnUnknownSessionIs404() throws {
        let answer = try second.client().request(
            "GET", "/v1/sessions/0123456789abcdef0123456789abcdef", headers: [("If-None-Match", "\"1\""), ("Prefer", "wait=5")])
        #expect(answer.status == 404)
        #expect(second.service.watcherCount == 0)
    }

    @Test func conditionalChangesHoldAcrossReplicas() throws {
        let id = try first.createSession()
        #expect(try second.client().json("PUT", "/v1/sessions/\(id)/inset", #"{"inset": 10}"#, headers: [("If-Match", "\"1\"")]).status == 200)
        let stale = try first.client().json("PUT", "/v1/sessions/\(id)/inset", #"{"inset": 20}"#, headers: [("If-Match", "\"1\"")])
        #expect(stale.status == 412)
        #expect(stale.header("Content-Type") == "application/problem+json")
        #expect(try first.client().request("GET", "/v1/sessions/\(id)").json["inset"] as? Double == 10)
    }

    @Test func aStreamThatLostItsChannelCarriesWhatRedisHoldsEvenIfOlder() throws {
        let id = try first.createSession()
        let stream = try EventStreamClient(port: second.port, sessionID: id)
        #expect(try stream.nextState()?.id == "1")
        for offset in [300, 0, 300, 0] {
            try first.client().json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": \#(offset)}"#)
        }
        for version in 2...5 { #expect(try stream.nextState()?.id == String(version)) }
        // What a failover that lost the last changes leaves: an older state,
        // and the channel's subscription gone with the old primary.
        let key = "\(prefix){\(id)}"
        try redisCLI(port: redis.port, "HSET", key, "v", "3", "r", "0")
        try redisCLI(port: redis.port, "CLIENT", "KILL", "TYPE", "pubsub")
        let resynchronized = try #require(try stream.nextState())
        #expect(resynchronized.id == "3", "the stream follows Redis back to version 3")
        #expect(resynchronized.state["isRevealed"] as? Bool == false)
        // And goes on from there.
        let next = try first.client().json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 0}"#)
        #expect(try next.json["version"] as? Int == 4)
        #expect(try stream.nextState()?.id == "4")
    }

    @Test func aReplicaLoadsTheLibraryAgainWhenRedisLostIt() throws {
        let id = try first.createSession()
        try redisCLI(port: redis.port, "FUNCTION", "FLUSH")
        let scrolled = try first.client().json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 300}"#)
        #expect(scrolled.status == 200)
        #expect(try scrolled.json["version"] as? Int == 2)
    }

    @Test func aStreamCutByAStoppingReplicaResumesOnTheOtherWithLastEventID() throws {
        let doomed = try LiveServer(store: .redis([redis.node]), keyPrefix: prefix)
        let id = try first.createSession()
        let stream = try EventStreamClient(port: doomed.port, sessionID: id)
        #expect(try stream.nextState()?.id == "1")
        try first.client().json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 300}"#)
        #expect(try stream.nextState()?.id == "2")
        doomed.service.stop()
        while try stream.next() != nil {}
        #expect(stream.ended, "a stopping replica ends its streams")

        let resumed = try EventStreamClient(port: second.port, sessionID: id, headers: [("Last-Event-ID", "2")])
        #expect(resumed.head.status == 200)
        try first.client().json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 0}"#)
        let next = try #require(try resumed.nextState())
        #expect(next.id == "3", "nothing the client had is sent again; the next change is")
    }

    @Test func metricsNameTheRedisStore() throws {
        let id = try first.createSession()
        let stream = try EventStreamClient(port: first.port, sessionID: id)
        #expect(try stream.nextState() != nil)
        let metrics = try first.client().request("GET", "/metrics").text
        #expect(metrics.contains("topchrome_redis_round_trip_seconds_count"))
        #expect(metrics.contains("topchrome_redis_subscriptions 1"))
        #expect(!metrics.contains("topchrome_sessions "), "no replica can count Redis's sessions cheaply")
    }
}

/// Two replicas on a Redis Cluster: sessions spread over its shards, and
/// each change reaches the other replica's watchers through its shard.
@Suite struct ClusterReplicaLiveTests {
    @Test func streamsOnOneReplicaFollowSessionsOnEveryShard() throws {
        let cluster = try RedisClusterFixture.primariesOnly()
        let prefix = "shards\(UInt32.random(in: 0...UInt32.max)):"
        let first = try LiveServer(store: .redis(cluster.seeds), keyPrefix: prefix)
        let second = try LiveServer(store: .redis(cluster.seeds), keyPrefix: prefix)
        #expect(first.waitUntilReady() && second.waitUntilReady())
        var ids: [String] = []
        var shards = Set<Int>()
        while shards.count < 3 {
            let id = try first.createSession()
            let slot = HashSlot.of(Array("\(prefix){\(id)}".utf8))
            shards.insert(try cluster.primary(of: slot).port)
            ids.append(id)
        }
        let streams = try ids.map { try EventStreamClient(port: second.port, sessionID: $0) }
        for stream in streams { #expect(try stream.nextState()?.id == "1") }
        for id in ids {
            #expect(try first.client().json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 300}"#).status == 200)
        }
        for stream in streams {
            let event = try #require(try stream.nextState())
            #expect(event.id == "2")
            #expect(event.state["isRevealed"] as? Bool == false)
        }
    }
}

/// What a replica does when Redis is not there, goes away, or comes back.
@Suite(.serialized) struct RedisOutageLiveTests {
    @Test func aReplicaStartsWithoutRedisAndServesOnceItComes() throws {
        let redis = try RedisServer()
        redis.stop()
        let server = try LiveServer(store: .redis([redis.node]), keyPrefix: "outage:")
        #expect(try server.client().request("GET", "/healthz").status == 200)
        let ready = try server.client().request("GET", "/readyz")
        #expect(ready.status == 503)
        #expect(ready.header("Content-Type") == "application/problem+json")
        #expect(ready.text.contains("session store"))
        let refused = try server.client().json("POST", "/v1/sessions", "")
        #expect(refused.status == 503)
        #expect(refused.header("Retry-After") != nil)
        #expect(refused.header("Content-Type") == "application/problem+json")

        try redis.restart()
        #expect(server.waitUntilReady())
        #expect(try server.client().json("POST", "/v1/sessions", "").status == 201)
    }

    @Test func aNewWatcherGets503WithinTheTimeoutWhileRedisIsGone() throws {
        let redis = try RedisServer()
        let server = try LiveServer(store: .redis([redis.node]), keyPrefix: "watchless:") { $0.redisTimeout = 0.5 }
        #expect(server.waitUntilReady())
        let id = try server.createSession()
        redis.stop()
        for headers in [[], [("If-None-Match", "\"1\""), ("Prefer", "wait=30")]] {
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
        let server = try LiveServer(store: .redis([redis.node]), keyPrefix: "full:")
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
        let server = try LiveServer(store: .redis([redis.node]), keyPrefix: "lost:") {
            $0.redisTimeout = 0.5
            $0.heartbeatSeconds = 1
        }
        #expect(server.waitUntilReady())
        let id = try server.createSession()
        let stream = try EventStreamClient(port: server.port, sessionID: id)
        #expect(try stream.nextState()?.id == "1")

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
}

/// A Redis Cluster losing a primary: after its replica takes over, the
/// same replica of the service writes again, without a restart.
@Suite(.serialized) struct RedisClusterFailoverLiveTests {
    @Test func writesSucceedAgainAfterAPrimaryIsKilled() throws {
        let cluster = try RedisClusterFixture.dedicated()
        let server = try LiveServer(store: .redis(cluster.seeds), keyPrefix: "failover:") { $0.heartbeatSeconds = 1 }
        #expect(server.waitUntilReady())
        let id = try server.createSession()
        let stream = try EventStreamClient(port: server.port, sessionID: id)
        #expect(try stream.nextState()?.id == "1")

        let victim = try cluster.primary(of: HashSlot.of(Array("failover:{\(id)}".utf8)))
        // Replication is asynchronous: give the new session time to reach
        // the replica (microseconds on loopback), or the failover loses it.
        usleep(500_000)
        victim.stop()
        var answered: WireResponse?
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            let attempt = try server.client().json("PUT", "/v1/sessions/\(id)/inset", #"{"inset": 42}"#)
            if attempt.status == 200 { answered = attempt; break }
            #expect(attempt.status == 503, "a failover answers 503 until it is over, not \(attempt.status)")
            #expect(attempt.header("Retry-After") != nil)
            usleep(200_000)
        }
        let written = try #require(answered, "no write succeeded within 30 s of the primary's death")
        let version = try #require(try written.json["version"] as? Int)
        var last: [String: Any] = [:]
        while let event = try stream.nextState() {
            last = event.state
            if event.state["version"] as? Int == version { break }
        }
        #expect(last["inset"] as? Double == 42, "the stream converges on what Redis holds")
    }
}
