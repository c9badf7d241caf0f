import Foundation
import Redis
import RedisTestSupport
import Testing
import TopChromeServer
import TopChromeTesting

/// A service on `redis-sentinel://…/mymaster` follows a real `SENTINEL
/// FAILOVER`: its writes succeed again on the promoted replica, and an
/// event stream opened before the failover converges to the latest state.
@Suite struct SentinelLiveTests {
    @Test func writesAndStreamsFollowASentinelFailover() throws {
        let redis = try RedisSentinelFixture()
        let endpoints = RedisEndpoints.sentinels([redis.sentinelNode], masterName: RedisSentinelFixture.masterName)
        let store = SessionStorage.redis(endpoints)

        // check-config and `redis-functions load` find the primary through the sentinel.
        let check = ConfigurationCheck(try configuration(store))
        #expect(check.exitStatus == 0, "\(check.problems) \(check.unreachable)")
        #expect(check.checked.contains("Sentinel: the primary of mymaster is 127.0.0.1:\(redis.primary.port)"), "\(check.checked)")
        var client = RedisConfiguration()
        client.commandTimeout = .seconds(2)
        let load = FunctionLibraryLoad(endpoints: endpoints, configuration: client)
        #expect(load.failures.isEmpty && load.loaded.count == 1 && load.loaded[0].hasSuffix("127.0.0.1:\(redis.primary.port)"), "\(load)")

        let server = try LiveServer(store: store, keyPrefix: "sentinel:")
        #expect(server.waitUntilReady())
        let id = try server.createSession()
        #expect(try scroll(server, id, to: 300).status == 200)
        let stream = try EventStreamClient(port: server.port, sessionID: id)
        #expect(stream.head.status == 200)
        #expect(try stream.nextState()?.state["isRevealed"] as? Bool == false)

        // What the service wrote is on the replica before it is promoted:
        // this test is about following the switch, not what a failover loses.
        try redis.waitUntilReplicaCaughtUp()
        try redis.failOver()
        #expect(try redis.primaryPort() == redis.replica.port)
        // Well before the sentinel demotes the old primary (some 10 s after
        // the switch), which until then takes writes and keeps subscribers:
        // only following `+switch-master` meets these bounds.
        let switched = Date()

        // The same service writes again, on the promoted replica, within a
        // bounded time. The same report each time: one that got 503 but was
        // made anyway turns the next into a no-op, not another change. One
        // answered before the service followed the switch (a loaded
        // machine) was made on the old primary, which still takes writes:
        // the next goes again, until one is held by the new primary.
        let deadline = Date().addingTimeInterval(5 * testTimeScale)
        var last: ReceivedResponse?
        var held = ""
        func heldByTheNewPrimary(_ answer: ReceivedResponse?) throws -> Bool {
            guard answer?.status == 200, let etag = answer?.header("ETag") else { return false }
            // The version of the ETag "<version>.<tag>" in the new primary's hash.
            let version = String(etag.dropFirst().split(separator: ".").first ?? "")
            held = try redisCLI(port: redis.replica.port, "HGETALL", "sentinel:{\(id)}")
            return held.split(separator: "\n").map(String.init).firstRange(of: ["v", version]) != nil
        }
        repeat {
            last = try? scroll(server, id, to: 0)
            if try heldByTheNewPrimary(last) { break }
            usleep(100_000)
        } while Date() < deadline
        #expect(last?.status == 200, "\(last?.text ?? "no answer")")
        let written = try #require(last?.header("ETag"))
        #expect(try redisCLI(port: redis.replica.port, "ROLE").hasPrefix("master"))
        #expect(try heldByTheNewPrimary(last), "\(written) vs \(held)")
        #expect(try server.client().request("GET", "/v1/sessions/\(id)").header("ETag") == written)

        // The stream converges to that state (its channel came back on the new primary).
        var converged = false
        while !converged, Date() < switched.addingTimeInterval(30), let event = try stream.nextState() {
            converged = "\"\(event.id)\"" == written || event.id == written
        }
        #expect(converged, "the stream never carried \(written)")
        #expect(Date().timeIntervalSince(switched) < 5 * testTimeScale,
                "the stream converged only \(Date().timeIntervalSince(switched)) s after the switch")
        // The switch is told and counted.
        #expect(RedisClusterFailoverLiveTests.metric(server, #"topchrome_redis_topology_changes_total{kind="sentinel_switch"}"#) == 1)

        // A change after convergence reaches it at once.
        let next = try scroll(server, id, to: 300)
        #expect(next.status == 200)
        let following = try #require(try stream.nextState())
        #expect("\"\(following.id)\"" == next.header("ETag") || following.id == next.header("ETag"))
    }

    /// Sentinels with an ACL user of their own (and the default user off):
    /// found with `--sentinel-username` and `--sentinel-password-file`;
    /// without them `check-config` says the sentinels refused (exit 2) and
    /// a server is not ready.
    @Test
    func sentinelsThatWantAUserAndPassword() throws {
        let redis = try RedisSentinelFixture()
        _ = try redisCLI(port: redis.sentinel.port, "ACL", "SETUSER", "watcher", "on", ">sentinel-secret", "allcommands", "allchannels")
        _ = try redisCLI(port: redis.sentinel.port, "ACL", "SETUSER", "default", "off")
        let store = "redis-sentinel://127.0.0.1:\(redis.sentinel.port)/\(RedisSentinelFixture.masterName)"
        let folder = try CheckConfigTests.folder()
        let password = folder.appendingPathComponent("sentinel-password")
        try Data("sentinel-secret\n".utf8).write(to: password)
        let credentials = ["--sentinel-username", "watcher", "--sentinel-password-file", password.path]

        let refused = try CheckConfigTests.check(["--store", store])
        #expect(refused.status == 2, "\(refused.output) \(refused.errors)")
        #expect(refused.errors.contains("--sentinel-password-file"), "\(refused.errors)")
        let accepted = try CheckConfigTests.check(["--store", store] + credentials)
        #expect(accepted.status == 0, "\(accepted.output) \(accepted.errors)")
        #expect(accepted.output.contains("the primary of mymaster is 127.0.0.1:\(redis.primary.port)"), "\(accepted.output)")

        let sentinels = SessionStorage.redis(.sentinels([redis.sentinelNode], masterName: RedisSentinelFixture.masterName))
        let server = try LiveServer(store: sentinels, keyPrefix: "sentinel-acl:") {
            $0.redis.sentinelUsername = "watcher"
            $0.redis.sentinelPassword = "sentinel-secret"
        }
        #expect(server.waitUntilReady())
        #expect(try server.client().request("POST", "/v1/sessions").status == 201)
        let without = try LiveServer(store: sentinels, keyPrefix: "sentinel-acl:")
        #expect(!without.waitUntilReady(within: 2), "no sentinel answers without the password")

        // Only with the sentinel store.
        let misplaced = try CheckConfigTests.check(["--store", "redis://127.0.0.1:\(redis.primary.port)"] + credentials)
        #expect(misplaced.status == 2 && misplaced.errors.contains("redis-sentinel://"), "\(misplaced.errors)")
    }

    /// `rediss-sentinel://`: the sentinel and the primary it names reached
    /// over TLS (a test CA), the switch heard over TLS too.
    @Test
    func sentinelsAndTheirPrimaryOverTLS() throws {
        let pki = try TestPKI()
        let primary = try RedisServer(["--repl-diskless-sync-delay", "0"], tls: pki)
        let replica = try RedisServer(["--repl-diskless-sync-delay", "0", "--tls-replication", "yes",
                                       "--replicaof", "127.0.0.1", String(primary.port)], tls: pki)
        let sentinel = try RedisServer(["--tls-replication", "yes"], tls: pki, sentinelConfiguration: """
            sentinel monitor \(RedisSentinelFixture.masterName) 127.0.0.1 \(primary.port) 1
            sentinel down-after-milliseconds \(RedisSentinelFixture.masterName) 1000
            sentinel failover-timeout \(RedisSentinelFixture.masterName) 5000

            """)
        #expect(eventually(within: 30) {
            (try? sentinel.cli(["SENTINEL", "replicas", RedisSentinelFixture.masterName]))?.contains(String(replica.port)) == true
                && (try? replica.cli(["INFO", "replication"]))?.contains("master_link_status:up") == true
        })
        let store = "rediss-sentinel://127.0.0.1:\(sentinel.port)/\(RedisSentinelFixture.masterName)"
        let checked = try CheckConfigTests.check(["--store", store, "--redis-ca-file", pki.caFile])
        #expect(checked.status == 0, "\(checked.output) \(checked.errors)")

        let tls = try RedisTLS(caFile: pki.caFile)
        let server = try LiveServer(store: .redis(.sentinels([sentinel.node], masterName: RedisSentinelFixture.masterName, transport: .tls)),
                                    keyPrefix: "sentinel-tls:") { $0.redis.tls = tls }
        #expect(server.waitUntilReady())
        #expect(try server.client().request("POST", "/v1/sessions").status == 201)
        #expect(eventually(within: 30) {
            (try? sentinel.cli(["SENTINEL", "FAILOVER", RedisSentinelFixture.masterName]))?.hasPrefix("OK") == true
        })
        #expect(eventually(within: 30) {
            RedisClusterFailoverLiveTests.metric(server, #"topchrome_redis_topology_changes_total{kind="sentinel_switch"}"#) == 1
        }, "the switch was not heard over TLS")
    }

    private func configuration(_ store: SessionStorage) throws -> ServiceConfiguration {
        var configuration = ServiceConfiguration()
        configuration.store = store
        configuration.redis.timeout = 2
        return configuration
    }

    private func scroll(_ server: LiveServer, _ id: String, to offset: Double) throws -> ReceivedResponse {
        try server.client().json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": \#(Int(offset))}"#)
    }
}
