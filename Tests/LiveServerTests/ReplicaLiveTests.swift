import Foundation
import RedisTestSupport
import Testing
import TopChromeServer
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
        first = try LiveServer(store: .redis(.seeds([redis.node])), keyPrefix: prefix)
        second = try LiveServer(store: .redis(.seeds([redis.node])), keyPrefix: prefix)
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

    @Test func aSocketOnOneReplicaHearsChangesMadeThroughTheOtherAndItsOwnReachIt() throws {
        let id = try first.createSession()
        let socket = try TestWebSocket(port: second.port, path: "/v1/sessions/\(id)/socket")
        _ = try socket.next(ofType: "state")
        #expect(try first.client().json("PUT", "/v1/sessions/\(id)/inset", #"{"inset": 33}"#).status == 200)
        let heard = try socket.next(ofType: "state")
        #expect((heard["state"] as? [String: Any])?["inset"] as? Double == 33)
        try socket.send(text: #"{"type":"inset","id":"s","body":{"inset":34}}"#)
        #expect(try socket.next(ofType: "answer")["id"] as? String == "s")
        #expect(try first.client().request("GET", "/v1/sessions/\(id)").json["inset"] as? Double == 34)
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
        let doomed = try LiveServer(store: .redis(.seeds([redis.node])), keyPrefix: prefix)
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
        // Round trips by node and command kind, connections by node (commands
        // and the watcher's channel), commands in flight.
        let node = redis.node.description
        let roundTrips = { (command: String) in
            metrics.split(separator: "\n").first { $0.hasPrefix("topchrome_redis_round_trip_seconds_count{node=\"\(node)\",command=\"\(command)\"} ") }
        }
        #expect(roundTrips("fcall") != nil && roundTrips("time") != nil, Comment(rawValue: metrics))
        #expect(!metrics.contains("_count{node=\"other\""))
        let connections = metrics.split(separator: "\n").first { $0.hasPrefix("topchrome_redis_connections{node=\"\(node)\"} ") }
        #expect(connections.flatMap { Int($0.split(separator: " ").last ?? "") }.map { $0 >= 2 } == true, Comment(rawValue: String(connections ?? "none")))
        #expect(metrics.contains("\ntopchrome_redis_commands_in_flight "))
        #expect(metrics.contains("topchrome_redis_subscriptions 1"))
        #expect(!metrics.contains("topchrome_sessions "), "no replica can count Redis's sessions cheaply")
    }
}
