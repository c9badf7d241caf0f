import Foundation
import Redis
import RedisTestSupport
import Testing
import TopChromeTesting

/// A Redis Cluster losing a primary: after its replica takes over, the
/// same replica of the service writes again, without a restart; the
/// failover is told (slots moved, a reconnection, the old primary back as
/// a replica).
@Suite(.serialized) struct RedisClusterFailoverLiveTests {
    @Test func writesSucceedAgainAfterAPrimaryIsKilled() throws {
        let cluster = try RedisClusterFixture.dedicated()
        let server = try LiveServer(store: .redis(.seeds(cluster.seeds)), keyPrefix: "failover:") { $0.sessions.heartbeatSeconds = 1 }
        #expect(server.waitUntilReady())
        let id = try server.createSession()
        let stream = try EventStreamClient(port: server.port, sessionID: id)
        #expect(versionOf(try stream.nextState()?.id) == 1)

        let victim = try cluster.primary(of: HashSlot.of(Array("failover:{\(id)}".utf8)))
        // A replica of the service that knows the cluster from other nodes
        // only: the victim leaves its map for good, so only the cluster's
        // word can tell it came back.
        let others = cluster.servers.filter { $0.port != victim.port }.map(\.node)
        let observer = try LiveServer(store: .redis(.seeds(others)), keyPrefix: "failover:")
        #expect(observer.waitUntilReady())
        // Replication is asynchronous: the new session must have reached
        // the replica, or the failover loses it.
        try cluster.waitUntilReplicated(from: victim)
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

        // Told and counted: the victim's slots moved to its replica, the
        // connection there counts as a reconnection (it was 0 before).
        for watching in [server, observer] {
            #expect(eventually(within: 30) { Self.metric(watching, #"topchrome_redis_topology_changes_total{kind="slots_moved"}"#) >= 1 })
            #expect(Self.metric(watching, "topchrome_redis_reconnects_total") >= 1)
        }
        #expect(Self.metric(observer, #"topchrome_redis_topology_changes_total{kind="replica_rejoined"}"#) == 0)
        // Back, it rejoins as a replica; the cluster says so at the next
        // refresh of the slot map (every 10 s).
        try victim.restart()
        #expect(eventually(within: 60) {
            Self.metric(observer, #"topchrome_redis_topology_changes_total{kind="replica_rejoined"}"#) == 1
        }, "the old primary was never told back")
    }

    static func metric(_ server: LiveServer, _ series: String) -> Int {
        guard let text = try? server.client().request("GET", "/metrics").text,
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix(series + " ") }) else { return -1 }
        return Int(line.split(separator: " ").last ?? "") ?? -1
    }
}
