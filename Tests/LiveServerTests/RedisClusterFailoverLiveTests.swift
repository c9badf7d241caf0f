import Foundation
import Redis
import RedisTestSupport
import Testing
import TopChromeTesting

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
