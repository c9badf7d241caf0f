import Foundation
import Redis
import RedisTestSupport
import Testing
import TopChromeServer
import TopChromeTesting

/// A failover, or a start from an older backup or state file, can lose a
/// state that clients saw, and the next change then reuses its version for
/// another state. The two must never share an ETag or an event id: a client
/// holding the lost one would get 304 for the new state, pass `If-Match`
/// over a state it never saw, or keep showing the lost state after
/// reconnecting.
@Suite struct LostStateLiveTests {
    /// Redis: `DUMP` the session, change it, `RESTORE` the dump (what a
    /// failover that lost the change leaves), change it otherwise.
    @Test func onRedisALostStateNeverNamesTheStateThatTookItsVersion() throws {
        let redis = try RedisServer()
        let server = try LiveServer(store: .redis(.seeds([redis.node])), keyPrefix: "lost:")
        #expect(server.waitUntilReady())
        let id = try server.createSession()
        let key = "lost:{\(id)}"
        _ = try redisCLI(port: redis.port, "EVAL", "redis.call('SET', KEYS[2], redis.call('DUMP', KEYS[1]))", "2", key, "dump:\(id)")
        let stream = try EventStreamClient(port: server.port, sessionID: id)
        #expect(versionOf(try stream.nextState()?.id) == 1)

        let lost = try server.client().json("PUT", "/v1/sessions/\(id)/inset", #"{"inset": 10}"#)
        #expect(try stream.nextState()?.state["inset"] as? Int == 10)
        _ = try redisCLI(port: redis.port, "EVAL", "redis.call('RESTORE', KEYS[1], 0, redis.call('GET', KEYS[2]), 'REPLACE')",
                         "2", key, "dump:\(id)")
        let taken = try server.client().json("PUT", "/v1/sessions/\(id)/inset", #"{"inset": 30}"#)

        let next = try #require(try stream.nextState(), "a watcher that sent the lost state sends the one with its version")
        #expect(next.state["inset"] as? Int == 30)
        #expect(versionOf(next.id) == 2)
        try checkALostStateIsNoCurrentOne(server, id, lost: lost, taken: taken)
    }

    /// The memory store: a start from a state file older than what clients
    /// saw (a crash before the last snapshot) renames every state.
    @Test func inMemoryALostStateNeverNamesTheStateThatTookItsVersion() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("lost-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("state.jsonl").path
        let before = try LiveServer(memoryOnly: true) { $0.stateFile.path = path }
        let id = try before.createSession()
        before.service.stop()
        let older = try Data(contentsOf: URL(fileURLWithPath: path))
        let again = try LiveServer(memoryOnly: true) { $0.stateFile.path = path }
        let lost = try again.client().json("PUT", "/v1/sessions/\(id)/inset", #"{"inset": 10}"#)
        again.service.stop()
        // A crash before the last snapshot: the file is older than what the client saw.
        try older.write(to: URL(fileURLWithPath: path))
        let server = try LiveServer(memoryOnly: true) { $0.stateFile.path = path }
        let taken = try server.client().json("PUT", "/v1/sessions/\(id)/inset", #"{"inset": 30}"#)
        try checkALostStateIsNoCurrentOne(server, id, lost: lost, taken: taken)
    }

    /// The client that saw the lost state (`lost`), now that `taken` has its version.
    private func checkALostStateIsNoCurrentOne(_ server: LiveServer, _ id: String, lost: ReceivedResponse, taken: ReceivedResponse,
                                               sourceLocation: SourceLocation = #_sourceLocation) throws {
        let lostETag = try #require(lost.header("ETag"), sourceLocation: sourceLocation)
        #expect(lost.etagVersion == 2 && taken.etagVersion == 2, "one version, two states", sourceLocation: sourceLocation)
        #expect(taken.header("ETag") != lostETag, sourceLocation: sourceLocation)

        let refused = try server.client().json("PUT", "/v1/sessions/\(id)/inset", #"{"inset": 20}"#, headers: [("If-Match", lostETag)])
        #expect(refused.status == 412, "If-Match over a state the client never saw", sourceLocation: sourceLocation)

        let read = try server.client().request("GET", "/v1/sessions/\(id)", headers: [("If-None-Match", lostETag)])
        #expect(read.status == 200, sourceLocation: sourceLocation)
        #expect(try read.json["inset"] as? Int == 30, "the state that took the version", sourceLocation: sourceLocation)
        #expect(read.header("ETag") == taken.header("ETag"), sourceLocation: sourceLocation)

        let lostID = String(lostETag.dropFirst().dropLast())
        let resumed = try EventStreamClient(port: server.port, sessionID: id, headers: [("Last-Event-ID", lostID)])
        let sent = try #require(try resumed.nextState(), "the current state is sent", sourceLocation: sourceLocation)
        #expect(sent.state["inset"] as? Int == 30, sourceLocation: sourceLocation)
        #expect("\"\(sent.id)\"" == taken.header("ETag"), "the event id is the ETag", sourceLocation: sourceLocation)
    }

    /// At `maxmemory` under `noeviction` Redis refuses what needs memory, and
    /// a function registered without flags counts as such. Reads and
    /// deletes need none: they succeed (a delete is what frees memory);
    /// creates and changes get 503 with Retry-After; nothing is lost.
    @Test func aFullRedisServesReadsAndDeletesAndRefusesChanges() throws {
        let redis = try RedisServer(["--maxmemory-policy", "noeviction"])
        let server = try LiveServer(store: .redis(.seeds([redis.node])), keyPrefix: "full:")
        #expect(server.waitUntilReady())
        let kept = try server.createSession(inset: 12), doomed = try server.createSession(inset: 13)
        let stream = try EventStreamClient(port: server.port, sessionID: kept)
        #expect(try stream.nextState()?.state["inset"] as? Int == 12)
        _ = try redisCLI(port: redis.port, "CONFIG", "SET", "maxmemory", "1")

        let read = try server.client().request("GET", "/v1/sessions/\(kept)")
        #expect(read.status == 200)
        #expect(try read.json["inset"] as? Int == 12)
        let etag = try #require(read.header("ETag"))
        #expect(try server.client().request("GET", "/v1/sessions/\(kept)", headers: [("If-None-Match", etag)]).status == 304)
        let watcher = try EventStreamClient(port: server.port, sessionID: kept)
        #expect(try watcher.nextState()?.state["inset"] as? Int == 12, "a new watcher reads the state")
        for refused in [try server.client().json("POST", "/v1/sessions", ""),
                        try server.client().json("PUT", "/v1/sessions/\(kept)/inset", #"{"inset": 40}"#),
                        try server.client().json("POST", "/v1/sessions/\(kept)/scroll", #"{"contentOffsetY": 300}"#)] {
            #expect(refused.status == 503)
            #expect(refused.header("Content-Type") == "application/problem+json")
            #expect(refused.header("Retry-After") != nil)
        }
        #expect(try server.client().request("DELETE", "/v1/sessions/\(doomed)").status == 204, "a delete frees memory")
        #expect(try server.client().request("GET", "/v1/sessions/\(doomed)").status == 404)

        _ = try redisCLI(port: redis.port, "CONFIG", "SET", "maxmemory", "0")
        let after = try server.client().request("GET", "/v1/sessions/\(kept)")
        #expect(try after.json["inset"] as? Int == 12 && after.header("ETag") == etag, "nothing lost, nothing changed")
        #expect(try server.client().json("PUT", "/v1/sessions/\(kept)/inset", #"{"inset": 40}"#).status == 200)
        #expect(try stream.nextState()?.state["inset"] as? Int == 40, "the stream went on through it")
    }

    /// A Redis that takes no writes at all (too few replicas for
    /// `min-replicas-to-write`; a failed save and a read-only node answer
    /// alike) still serves reads; changes get 503.
    @Test func aRedisThatTakesNoWritesStillServesReads() throws {
        let redis = try RedisServer()
        let server = try LiveServer(store: .redis(.seeds([redis.node])), keyPrefix: "nowrites:")
        #expect(server.waitUntilReady())
        let id = try server.createSession(inset: 7)
        let etag = try server.etag(id)
        _ = try redisCLI(port: redis.port, "CONFIG", "SET", "min-replicas-to-write", "1")
        let read = try server.client().request("GET", "/v1/sessions/\(id)")
        #expect(read.status == 200)
        #expect(read.header("ETag") == etag)
        let watcher = try EventStreamClient(port: server.port, sessionID: id)
        #expect(try watcher.nextState()?.state["inset"] as? Int == 7)
        let refused = try server.client().json("PUT", "/v1/sessions/\(id)/inset", #"{"inset": 40}"#)
        #expect(refused.status == 503 && refused.header("Retry-After") != nil)
        _ = try redisCLI(port: redis.port, "CONFIG", "SET", "min-replicas-to-write", "0")
        #expect(try server.client().request("GET", "/v1/sessions/\(id)").header("ETag") == etag, "nothing changed")
    }
}
