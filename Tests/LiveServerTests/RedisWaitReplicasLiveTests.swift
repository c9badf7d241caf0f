import Foundation
import Redis
import RedisTestSupport
import Testing
import TopChromeTesting

/// `--redis-wait-replicas N`: a change is acknowledged once N replicas of
/// its primary hold it (`WAIT`), else 503 saying it was made but not confirmed.
@Suite struct RedisWaitReplicasLiveTests {
    /// A cluster of these tests' own, one replica per primary: on the shared
    /// one, a drill that kills a primary leaves its slots unserved for
    /// seconds, longer than the short timeouts here wait.
    static let ownCluster = Result { try RedisClusterFixture.dedicated() }

    let prefix = "wait\(UInt32.random(in: 0...UInt32.max)):"

    /// A replica of the service on `ownCluster`; `timeout` short where
    /// every change waits it out.
    func server(waitingFor replicas: Int, cluster: RedisClusterFixture, timeout: Double? = nil) throws -> LiveServer {
        let server = try LiveServer(store: .redis(.seeds(cluster.seeds)), keyPrefix: prefix) {
            $0.redis.waitReplicas = replicas
            if let timeout { $0.redis.timeout = timeout }
        }
        #expect(server.waitUntilReady())
        return server
    }

    /// A session for the test to work on, made by a server that does not
    /// wait for replicas: made again after a 503 (a loaded machine, Redis
    /// not answering in time), which is not what these tests are about.
    static func created(on server: LiveServer, inset: Double? = nil) throws -> String {
        for _ in 0..<19 {
            if let id = try? server.createSession(inset: inset) { return id }
            usleep(100_000)
        }
        return try server.createSession(inset: inset)
    }

    @Test func changesConfirmedByTheOneReplicaThereIsSucceed() throws {
        let cluster = try Self.ownCluster.get()
        let plain = try server(waitingFor: 0, cluster: cluster)
        let server = try server(waitingFor: 1, cluster: cluster)
        var created: ReceivedResponse?
        // On a loaded machine `WAIT` may time out, the connection a change
        // and its `WAIT` take (made at the first change) may still be
        // connecting or be lost, and Redis may not answer in time: 503s a
        // client retries, whichever the cause.
        for _ in 0..<20 where created == nil {
            let attempt = try server.client().json("POST", "/v1/sessions", #"{"inset": 20}"#)
            if attempt.status == 201 {
                created = attempt
            } else {
                #expect(attempt.isRetryableRefusal, "\(attempt.status) \(attempt.text)")
                usleep(100_000)
            }
        }
        #expect(try created?.json["inset"] as? Double == 20)
        let id = try Self.created(on: plain)
        #expect(try server.client().json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 300}"#).status == 200)
        #expect(try server.client().json("PUT", "/v1/sessions/\(id)/inset", #"{"inset": 30}"#).status == 200)
        #expect(try server.client().request("DELETE", "/v1/sessions/\(id)").status == 204)
    }

    @Test func aChangeMoreReplicasMustConfirmThanThereAreIs503ButMade() throws {
        let cluster = try Self.ownCluster.get()
        let plain = try server(waitingFor: 0, cluster: cluster)
        let waiting = try server(waitingFor: 2, cluster: cluster, timeout: 0.5)
        let id = try Self.created(on: plain, inset: 20)

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
        let cluster = try Self.ownCluster.get()
        let plain = try server(waitingFor: 0, cluster: cluster)
        let waiting = try server(waitingFor: 2, cluster: cluster)
        let id = try Self.created(on: plain)
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
        let plain = try LiveServer(store: .redis(.seeds([redis.node])), keyPrefix: prefix)
        let waiting = try LiveServer(store: .redis(.seeds([redis.node])), keyPrefix: prefix) {
            $0.redis.waitReplicas = 1
            $0.redis.timeout = 0.5
        }
        #expect(plain.waitUntilReady() && waiting.waitUntilReady())
        let id = try Self.created(on: plain, inset: 0)
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
        let server = try LiveServer(store: .redis(.seeds([primary.node])), keyPrefix: prefix) {
            $0.redis.waitReplicas = 1
        }
        #expect(server.waitUntilReady())
        let id = try Self.created(on: server)
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
