import Foundation
import RedisTestSupport
import Testing
import TopChromeTesting

/// At start the service says where a failover could drop acknowledged
/// writes: a Redis that takes writes with no replica
/// (`min-replicas-to-write 0`), or that it could not tell.
@Suite struct ReplicaRequirementLiveTests {
    static let warning = "Redis accepts writes with no replica"

    @Test func aRedisThatTakesWritesWithNoReplicaIsWarnedOf() throws {
        let redis = try RedisServer()
        let (server, _) = try RedisRefusalLiveTests.serve(redis)
        #expect(eventually { server.log.contains(Self.warning) && server.log.contains("node=127.0.0.1:\(redis.port)") }, "\(server.log)")
    }

    @Test func aRedisThatRequiresAReplicaIsNot() throws {
        let redis = try RedisServer(["--min-replicas-to-write", "1"])
        let (server, client) = try RedisRefusalLiveTests.serve(redis)
        // Checked before the server listens, and a warning is written at once.
        #expect(try client.request("GET", "/healthz").status == 200)
        #expect(!server.log.contains(Self.warning), "\(server.log)")
        #expect(!server.log.contains("min-replicas-to-write could not be checked"), "\(server.log)")
    }

    @Test func aUserWhoMayNotReadTheConfigurationIsToldItCouldNotBeChecked() throws {
        let redis = try RedisServer()
        let (server, _) = try RedisRefusalLiveTests.serve(redis, as: "caller")
        #expect(eventually { server.log.contains("Redis min-replicas-to-write could not be checked") && server.log.contains("NOPERM") }, "\(server.log)")
        #expect(!server.log.contains(Self.warning))
    }
}
