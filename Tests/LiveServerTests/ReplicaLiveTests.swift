import Foundation
import Redis
import RedisTestSupport
import Testing
import TopChromeApp
import TopChromeTesting

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
        #expect(read.etagVersion == 1)

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
        #expect(versionOf(try stream.nextState()?.id) == 1)
        let writer = try first.client()
        for step in 1...20 {
            let response = try writer.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": \#(step % 2 == 1 ? 300 : 0)}"#)
            #expect(response.status == 200)
        }
        for version in 2...21 {
            let event = try #require(try stream.nextState())
            #expect(versionOf(event.id) == UInt64(version))
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
            try second.client().request("GET", "/v1/sessions/\(id)", headers: [("If-None-Match", try second.etag(id)), ("Prefer", "wait=10")])
        }
        #expect(eventually { second.service.watcherCount == 1 })
        #expect(try first.client().json("PUT", "/v1/sessions/\(id)/inset", #"{"inset": 100}"#).status == 200)
        let answer = try poll.value
        #expect(answer.status == 200)
        #expect(try answer.json["inset"] as? Double == 100)
        #expect(answer.etagVersion == 2)
    }

    /// The same 400 as with the memory store for a tag sent without quotes.
    @Test func anUnquotedEntityTagIs400OnRedisToo() throws {
        let id = try first.createSession()
        for name in ["If-Match", "If-None-Match"] {
            let answer = try second.client().json("PUT", "/v1/sessions/\(id)/inset", #"{"inset": 10}"#, headers: [(name, "1")])
            #expect(answer.status == 400)
            #expect(answer.header("Content-Type") == "application/problem+json")
            #expect(answer.text.contains("quoted as ETag gives them"))
        }
        #expect(try first.client().request("GET", "/v1/sessions/\(id)").etagVersion == 1, "nothing changed")
    }

    @Test func aLongPollForAnUnknownSessionIs404() throws {
        let answer = try second.client().request(
            "GET", "/v1/sessions/0123456789abcdef0123456789abcdef", headers: [("If-None-Match", "\"1.000000000000\""), ("Prefer", "wait=5")])
        #expect(answer.status == 404)
        #expect(second.service.watcherCount == 0)
    }

    @Test func conditionalChangesHoldAcrossReplicas() throws {
        let id = try first.createSession()
        let read = [("If-Match", try first.etag(id))]
        #expect(try second.client().json("PUT", "/v1/sessions/\(id)/inset", #"{"inset": 10}"#, headers: read).status == 200)
        let stale = try first.client().json("PUT", "/v1/sessions/\(id)/inset", #"{"inset": 20}"#, headers: read)
        #expect(stale.status == 412)
        #expect(stale.header("Content-Type") == "application/problem+json")
        #expect(try first.client().request("GET", "/v1/sessions/\(id)").json["inset"] as? Double == 10)
    }

    @Test func aStreamThatLostItsChannelCarriesWhatRedisHoldsEvenIfOlder() throws {
        let id = try first.createSession()
        let stream = try EventStreamClient(port: second.port, sessionID: id)
        #expect(versionOf(try stream.nextState()?.id) == 1)
        for offset in [300, 0, 300, 0] {
            try first.client().json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": \#(offset)}"#)
        }
        for version: UInt64 in 2...5 { #expect(versionOf(try stream.nextState()?.id) == version) }
        // What a failover that lost the last changes leaves: an older state,
        // and the channel's subscription gone with the old primary.
        let key = "\(prefix){\(id)}"
        try redisCLI(port: redis.port, "HSET", key, "v", "3", "r", "0")
        try redisCLI(port: redis.port, "CLIENT", "KILL", "TYPE", "pubsub")
        let resynchronized = try #require(try stream.nextState())
        #expect(versionOf(resynchronized.id) == 3, "the stream follows Redis back to version 3")
        #expect(resynchronized.state["isRevealed"] as? Bool == false)
        // And goes on from there.
        let next = try first.client().json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 0}"#)
        #expect(try next.json["version"] as? Int == 4)
        #expect(versionOf(try stream.nextState()?.id) == 4)
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
        #expect(versionOf(try stream.nextState()?.id) == 1)
        try first.client().json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 300}"#)
        let had = try #require(try stream.nextState()?.id)
        #expect(versionOf(had) == 2)
        doomed.service.stop()
        while try stream.next() != nil {}
        #expect(stream.ended, "a stopping replica ends its streams")

        let resumed = try EventStreamClient(port: second.port, sessionID: id, headers: [("Last-Event-ID", had)])
        #expect(resumed.head.status == 200)
        try first.client().json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 0}"#)
        let next = try #require(try resumed.nextState())
        #expect(versionOf(next.id) == 3, "nothing the client had is sent again; the next change is")
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
        for stream in streams { #expect(versionOf(try stream.nextState()?.id) == 1) }
        for id in ids {
            #expect(try first.client().json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 300}"#).status == 200)
        }
        for stream in streams {
            let event = try #require(try stream.nextState())
            #expect(versionOf(event.id) == 2)
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
        let server = try LiveServer(store: .redis([redis.node]), keyPrefix: "outage:") { $0.authToken = "s3cret-token" }
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
        let server = try LiveServer(store: .redis([redis.node]), keyPrefix: "watchless:") { $0.redisTimeout = 0.5 }
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
        let server = try LiveServer(store: .redis([redis.node]), keyPrefix: "unheard:") { $0.redisTimeout = 0.5 }
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
        #expect(eventually { server.service.redisStore?.channelsHeld == 0 })
    }

    /// A create whose answer never came may have made a session whose id
    /// the client never got: it is told to create another, not to read it.
    @Test func aCreateThatTimedOutSaysWhatIsTrueForACreate() throws {
        let redis = try RedisServer()
        let server = try LiveServer(store: .redis([redis.node]), keyPrefix: "lostcreate:") { $0.redisTimeout = 0.3 }
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
        let server = try LiveServer(store: .redis([redis.node]), keyPrefix: "lostread:") { $0.redisTimeout = 0.3 }
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
        #expect(server.service.redisStore?.channelsHeld == 0)
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
        #expect(server.service.redisStore?.channelsHeld == 0)
    }

    /// An event stream and a long-poll of a session, opened once the
    /// server's Redis is stopped and its readiness says so: each answer and
    /// how long it took.
    private func watchesAfterRedisStopped(redisTimeout: Double, keyPrefix: String) throws
        -> (LiveServer, [(path: String, response: ReceivedResponse, seconds: Double)]) {
        let redis = try RedisServer()
        let server = try LiveServer(store: .redis([redis.node]), keyPrefix: keyPrefix) { $0.redisTimeout = redisTimeout }
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

/// A Redis Cluster losing a primary: after its replica takes over, the
/// same replica of the service writes again, without a restart.
@Suite(.serialized) struct RedisClusterFailoverLiveTests {
    @Test func writesSucceedAgainAfterAPrimaryIsKilled() throws {
        let cluster = try RedisClusterFixture.dedicated()
        let server = try LiveServer(store: .redis(cluster.seeds), keyPrefix: "failover:") { $0.heartbeatSeconds = 1 }
        #expect(server.waitUntilReady())
        let id = try server.createSession()
        let stream = try EventStreamClient(port: server.port, sessionID: id)
        #expect(versionOf(try stream.nextState()?.id) == 1)

        let victim = try cluster.primary(of: HashSlot.of(Array("failover:{\(id)}".utf8)))
        // Replication is asynchronous: give the new session time to reach
        // the replica (microseconds on loopback), or the failover loses it.
        usleep(500_000)
        victim.stop()
        var answered: ReceivedResponse?
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

/// `--redis-wait-replicas N`: a change is acknowledged once N replicas of
/// its primary hold it (`WAIT`), else 503 saying it was made but not confirmed.
@Suite struct RedisWaitReplicasLiveTests {
    let prefix = "wait\(UInt32.random(in: 0...UInt32.max)):"

    /// A replica of the service on the shared cluster (one Redis replica per
    /// primary); `timeout` short where every change waits it out.
    func server(waitingFor replicas: Int, cluster: RedisClusterFixture, timeout: Double = 1) throws -> LiveServer {
        let server = try LiveServer(store: .redis(cluster.seeds), keyPrefix: prefix) {
            $0.redisWaitReplicas = replicas
            $0.redisTimeout = timeout
        }
        #expect(server.waitUntilReady())
        return server
    }

    /// Whether the primary now serving the session has a replica online
    /// (another test may have killed a primary, leaving its promoted replica alone).
    func isReplicated(_ id: String, in cluster: RedisClusterFixture) throws -> Bool {
        let slot = HashSlot.of(Array("\(prefix){\(id)}".utf8))
        let seed = try #require(cluster.seeds.first)
        // <id> <address> <flags> <primary> <ping> <pong> <epoch> <link> <slots...>
        let nodes = try redisCLI(port: seed.port, "CLUSTER", "NODES").split(separator: "\n").map { $0.split(separator: " ") }
        let serving = nodes.first { fields in
            fields.count > 8 && fields[2].contains("master") && !fields[2].contains("fail") && fields[8...].contains { range in
                let bounds = range.split(separator: "-").compactMap { Int($0) }
                return bounds.count >= 1 && (bounds[0]...(bounds.last ?? bounds[0])).contains(slot)
            }
        }
        guard let primary = serving?.first else { return false }
        return nodes.contains { $0.count > 7 && $0[3] == primary && $0[2].contains("slave") && !$0[2].contains("fail") && $0[7] == "connected" }
    }

    @Test func changesConfirmedByTheOneReplicaThereIsSucceed() throws {
        let cluster = try RedisClusterFixture.shared()
        let plain = try server(waitingFor: 0, cluster: cluster)
        let server = try server(waitingFor: 1, cluster: cluster)
        var created: ReceivedResponse?
        for _ in 0..<20 where created == nil {
            let attempt = try server.client().json("POST", "/v1/sessions", #"{"inset": 20}"#)
            if attempt.status == 201 { created = attempt } else { #expect(attempt.text.contains("not confirmed by 1 Redis replica")) }
        }
        #expect(try created?.json["inset"] as? Double == 20)
        var id = try plain.createSession()
        for _ in 0..<20 where !(try isReplicated(id, in: cluster)) { id = try plain.createSession() }
        #expect(try isReplicated(id, in: cluster))
        #expect(try server.client().json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 300}"#).status == 200)
        #expect(try server.client().json("PUT", "/v1/sessions/\(id)/inset", #"{"inset": 30}"#).status == 200)
        #expect(try server.client().request("DELETE", "/v1/sessions/\(id)").status == 204)
    }

    @Test func aChangeMoreReplicasMustConfirmThanThereAreIs503ButMade() throws {
        let cluster = try RedisClusterFixture.shared()
        let plain = try server(waitingFor: 0, cluster: cluster)
        let waiting = try server(waitingFor: 2, cluster: cluster, timeout: 0.5)
        let id = try plain.createSession(inset: 20)

        let scrolled = try waiting.client().json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 300}"#)
        #expect(scrolled.status == 503)
        #expect(scrolled.header("Content-Type") == "application/problem+json")
        #expect(scrolled.header("Retry-After") != nil)
        #expect(scrolled.text.contains("the change was made but not confirmed by 2 Redis replicas"), "\(scrolled.text)")
        let read = try plain.client().request("GET", "/v1/sessions/\(id)")
        #expect(try read.json["isRevealed"] as? Bool == false, "the change is in Redis")
        #expect(read.etagVersion == 2)

        let deleted = try waiting.client().request("DELETE", "/v1/sessions/\(id)")
        #expect(deleted.status == 503)
        #expect(deleted.text.contains("not confirmed by 2 Redis replicas"))
        #expect(try plain.client().request("GET", "/v1/sessions/\(id)").status == 404, "the removal is in Redis")

        let created = try waiting.client().json("POST", "/v1/sessions", #"{"inset": 7}"#)
        #expect(created.status == 503)
        #expect(created.text.contains("not confirmed by 2 Redis replicas"))
        let keys = try cluster.primaries().map { try redisCLI(port: $0.port, "--scan", "--pattern", "\(prefix)*") }.joined()
        #expect(keys.split(separator: "\n").count == 1, "the new session is in Redis: \(keys)")
    }

    /// Reads, and changes that changed nothing, are answered without waiting.
    @Test func readsAndStaleReportsDoNotWait() throws {
        let cluster = try RedisClusterFixture.shared()
        let plain = try server(waitingFor: 0, cluster: cluster)
        let waiting = try server(waitingFor: 2, cluster: cluster)
        let id = try plain.createSession()
        #expect(try plain.client().json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 0, "seq": 5}"#).status == 200)
        #expect(try waiting.client().request("GET", "/v1/sessions/\(id)").status == 200)
        let stale = try waiting.client().json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 300, "seq": 4}"#)
        #expect(stale.status == 200)
        #expect(try stale.json["isRevealed"] as? Bool == true)
    }

    /// A request that left the session as it was has nothing to confirm:
    /// with a replica to wait for and none there, it is answered at once
    /// with the unchanged state, while a real change still gets 503.
    @Test func requestsThatChangeNothingDoNotWaitForReplicas() throws {
        let redis = try RedisServer()
        let plain = try LiveServer(store: .redis([redis.node]), keyPrefix: prefix)
        let waiting = try LiveServer(store: .redis([redis.node]), keyPrefix: prefix) {
            $0.redisWaitReplicas = 1
            $0.redisTimeout = 0.5
        }
        #expect(plain.waitUntilReady() && waiting.waitUntilReady())
        let id = try plain.createSession(inset: 0)
        for (method, path, body) in [("PUT", "inset", #"{"inset": 0}"#), ("POST", "disappear", ""),
                                     ("POST", "scroll", #"{"contentOffsetY": 0}"#),
                                     ("POST", "scroll", #"{"contentOffsetY": 300, "axis": "horizontal"}"#)] {
            let answer = try waiting.client().json(method, "/v1/sessions/\(id)/\(path)", body)
            #expect(answer.status == 200, "\(method) \(path): \(answer.status) \(answer.text)")
            #expect(answer.etagVersion == 1, "\(method) \(path) changed nothing")
            #expect(try answer.json["inset"] as? Double == 0)
            #expect(try answer.json["isRevealed"] as? Bool == true)
        }
        let changed = try waiting.client().json("PUT", "/v1/sessions/\(id)/inset", #"{"inset": 40}"#)
        #expect(changed.status == 503)
        #expect(changed.text.contains("the change was made but not confirmed by 1 Redis replica"), "\(changed.text)")
        #expect(try plain.client().request("GET", "/v1/sessions/\(id)").etagVersion == 2)
    }

    /// WAIT follows the change on the connection that made it: with the
    /// only replica frozen, no change is confirmed, though older writes were.
    @Test func aFrozenReplicaConfirmsNothing() throws {
        let primary = try RedisServer(["--repl-diskless-sync-delay", "0"])
        let replica = try RedisServer(["--replicaof", "127.0.0.1", String(primary.port)])
        // Online as the primary sees it: after a diskless sync, only once the replica's first acknowledgement came.
        #expect(eventually(within: 10) { (try? redisCLI(port: primary.port, "INFO", "replication"))?.contains("state=online") == true })
        let server = try LiveServer(store: .redis([primary.node]), keyPrefix: prefix) {
            $0.redisWaitReplicas = 1
        }
        #expect(server.waitUntilReady())
        let id = try server.createSession()
        replica.signal(SIGSTOP)
        defer { replica.signal(SIGCONT) }
        let frozen = try server.client().json("PUT", "/v1/sessions/\(id)/inset", #"{"inset": 40}"#)
        #expect(frozen.status == 503)
        #expect(frozen.text.contains("not confirmed by 1 Redis replica"), "\(frozen.text)")
        #expect(try redisCLI(port: primary.port, "HGET", "\(prefix){\(id)}", "i").hasPrefix("40"))
        replica.signal(SIGCONT)
        #expect(try server.client().json("PUT", "/v1/sessions/\(id)/inset", #"{"inset": 50}"#).status == 200)
    }
}

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
        let story = lines(server.log, "Redis").map { line in
            ["Redis unreachable", "Redis reachable again", "Redis connection lost"].first { line.contains($0) } ?? "?"
        }
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
        let server = try ProcessLifecycleTests.RunningServer(
            ["--port", "0", "--threads", "1", "--log-format", "json", "--store", "redis://127.0.0.1:\(redis.port)"])
        _ = try server.waitUntilListening()
        let client = try TestHTTPClient(port: server.port)
        #expect(eventually(within: 10) { (try? client.request("GET", "/readyz").status) == 200 })
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
