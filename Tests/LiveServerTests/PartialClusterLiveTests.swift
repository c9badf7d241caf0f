import Foundation
import Redis
import RedisTestSupport
import Testing
import TopChromeTesting

/// A Redis Cluster with one primary of three away (and no replica to take
/// over) still serves two thirds of the sessions: the replica stays ready,
/// answers 503 with `Retry-After` for the missing slots only, and says in
/// `/metrics` how many slots it cannot serve.
@Suite struct PartialClusterLiveTests {
    @Test func aClusterMissingAPrimaryServesTheRestAndStaysReady() throws {
        let cluster = try RedisClusterFixture.dedicated(replicasPerPrimary: 0)
        // By default the other primaries refuse every slot once one is uncovered.
        for node in cluster.servers {
            _ = try redisCLI(port: node.port, "CONFIG", "SET", "cluster-require-full-coverage", "no")
        }
        let prefix = "partial\(UInt32.random(in: 0...UInt32.max)):"
        let server = try LiveServer(store: .redis(.seeds(cluster.seeds)), keyPrefix: prefix) { $0.redis.timeout = 0.5 }
        #expect(server.waitUntilReady())
        let unserved = { () -> Int? in
            let metrics = (try? server.client().request("GET", "/metrics").text) ?? ""
            let line = metrics.split(separator: "\n").first { $0.hasPrefix("topchrome_redis_slots_unserved ") }
            return line.flatMap { Int($0.split(separator: " ")[1]) }
        }
        // Connections to the primaries may still be opening when the replica
        // first says it is ready (partial readiness); all slots come in soon.
        #expect(eventually(within: 10) { unserved() == 0 }, "\(String(describing: unserved()))")
        var byPrimary: [Int: String] = [:]
        while byPrimary.count < 3 {
            let id = try server.createSession(inset: 10)
            byPrimary[try cluster.primary(of: HashSlot.of(Array("\(prefix){\(id)}".utf8))).port] = id
        }
        let away = cluster.servers[0]
        away.stop()

        #expect(eventually(within: 10) { (unserved() ?? 0) > 0 })
        #expect((5000...6000).contains(unserved() ?? 0), "a third of the slots: \(String(describing: unserved()))")
        let ready = try server.client().request("GET", "/readyz")
        #expect(ready.status == 200, "\(ready.status) \(ready.text)")
        for (port, id) in byPrimary {
            let read = try server.client().request("GET", "/v1/sessions/\(id)")
            if port == away.port {
                #expect(read.status == 503, "\(read.status) \(read.text)")
                #expect(read.header("Retry-After") != nil)
            } else {
                #expect(read.status == 200, "\(read.status) \(read.text)")
                #expect(try server.client().json("PUT", "/v1/sessions/\(id)/inset", #"{"inset": 30}"#).status == 200)
            }
        }
    }
}
