import Redis
import RedisTestSupport
import Testing
import TopChromeTesting

/// Two replicas on a Redis Cluster: sessions spread over its shards, and
/// each change reaches the other replica's watchers through its shard.
@Suite struct ClusterReplicaLiveTests {
    @Test func streamsOnOneReplicaFollowSessionsOnEveryShard() throws {
        let cluster = try RedisClusterFixture.primariesOnly()
        let prefix = "shards\(UInt32.random(in: 0...UInt32.max)):"
        let first = try LiveServer(store: .redis(.seeds(cluster.seeds)), keyPrefix: prefix)
        let second = try LiveServer(store: .redis(.seeds(cluster.seeds)), keyPrefix: prefix)
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
