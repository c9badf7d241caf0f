import Foundation
import Redis
import RedisTestSupport
import Testing

/// A client against the shared 3-primary, 3-replica cluster. Serialized:
/// some tests move slots or kill a primary, which the others must not see
/// half done.
@Suite(.serialized)
struct RedisClusterTests {
    let cluster: RedisClusterFixture
    let redirects = Counter()
    let asks = Counter()
    let client: RedisClient

    init() throws {
        cluster = try RedisClusterFixture.shared()
        try cluster.waitUntilHealthy()
        var configuration = RedisConfiguration()
        configuration.metrics.redirected = { [redirects, asks] asking in
            if asking { asks.increment() } else { redirects.increment() }
        }
        client = RedisClient(seeds: cluster.seeds, configuration: configuration)
    }

    @Test func keysSpreadOverEveryPrimaryAndReadBack() async throws {
        defer { client.close() }
        for index in 0..<300 {
            #expect(try await client.send(["SET", "spread:\(index)", "\(index)"]) == .simple("OK"))
        }
        #expect(client.topology == .cluster)
        let primaries = try cluster.primaries()
        #expect(primaries.count == 3)
        for primary in primaries {
            let keys = try redisCLI(port: primary.port, "DBSIZE").trimmingCharacters(in: .whitespacesAndNewlines)
            #expect((Int(keys) ?? 0) > 0, "primary \(primary.port) holds no key")
        }
        for index in 0..<300 {
            #expect(try await client.send(["GET", "spread:\(index)"]) == .bulk(Array("\(index)".utf8)))
        }
    }

    @Test func hashSlotsAgreeWithTheClusterForEveryKindOfKey() async throws {
        defer { client.close() }
        let keys: [[UInt8]] = [
            "", "a", "123456789", "{user1000}.following", "foo{}{bar}", "foo{{bar}}zap", "foo{bar}{zap}",
            "{", "}", "{}", "}{", "a{b", "{a}b{c}", "topchrome:{3f2a9c}", "日本語{鍵}",
        ].map { Array($0.utf8) } + [[0, 255, 123, 1, 125, 13, 10]]
        for key in keys {
            let reply = await withCheckedContinuation { done in
                client.send([Array("CLUSTER".utf8), Array("KEYSLOT".utf8), key]) { done.resume(returning: $0) }
            }
            #expect(try reply.get() == .integer(Int64(HashSlot.of(key))), "key \(key)")
        }
    }

    @Test func movedAndAskRedirectionsAreFollowedWhileASlotMigrates() async throws {
        defer { client.close() }
        // Let the client learn the map first, so that only the migration redirects.
        #expect(try await client.send(["SET", "warm-up", "1"]) == .simple("OK"))
        #expect(await eventually { client.isConnected })
        let tag = "{migrating:\(UUID().uuidString)}"
        let (key, resident) = (tag + ":new", tag + ":resident")
        let slot = HashSlot.of(key)
        #expect(try await client.send(["SET", resident, "here"]) == .simple("OK"))
        let source = try cluster.primary(of: slot)
        let target = try #require(try cluster.primaries().first { $0 !== source })
        let (sourceID, targetID) = (try cluster.nodeID(of: source), try cluster.nodeID(of: target))
        try redisCLI(port: target.port, "CLUSTER", "SETSLOT", String(slot), "IMPORTING", sourceID)
        try redisCLI(port: source.port, "CLUSTER", "SETSLOT", String(slot), "MIGRATING", targetID)

        // A key the source does not have, in a migrating slot, lives on the target: ASK.
        #expect(try await client.send(["SET", key, "moved"]) == .simple("OK"))
        #expect(asks.value >= 1)
        #expect(try redisCLI(port: target.port, "CLUSTER", "COUNTKEYSINSLOT", String(slot)).hasPrefix("1"))

        // Keys of one command split between the two nodes: the caller must try
        // again. A read, so said: the client sends it again until its deadline,
        // and one last attempt still out then (a loaded machine: seen once)
        // tells why it went again, not the time it ran out of.
        let split = await withCheckedContinuation { done in
            client.send(["MGET", resident, key], idempotent: true) { done.resume(returning: $0) }
        }
        guard case .failure(.tryAgain(let message)) = split else {
            Issue.record("expected TRYAGAIN, got \(split)")
            return
        }
        #expect(message.hasPrefix("TRYAGAIN"))
        try redisCLI(port: source.port, "MIGRATE", "127.0.0.1", String(target.port), "", "0", "5000", "KEYS", resident)

        // The slot now belongs to the target; the client's map still says source: MOVED.
        for node in [target, source] + (try cluster.primaries().filter { $0 !== target && $0 !== source }) {
            try redisCLI(port: node.port, "CLUSTER", "SETSLOT", String(slot), "NODE", targetID)
        }
        let before = redirects.value
        #expect(try await client.send(["GET", key]) == .bulk(Array("moved".utf8)))
        #expect(redirects.value > before)
        #expect(try await client.send(["GET", key]) == .bulk(Array("moved".utf8)))
        #expect(try await client.send(["MGET", resident, key]) == .array([.bulk(Array("here".utf8)), .bulk(Array("moved".utf8))]))
    }

    /// Also a subscription to a channel of the killed primary's: it is
    /// subscribed again on the promoted replica.
    @Test func writesResumeAfterAPrimaryIsKilledAndItsReplicaTakesOver() async throws {
        let subscriber = RedisSubscriber(client: client)
        defer { subscriber.close(); client.close() }
        let key = "failover:{\(UUID().uuidString)}"
        let channel = key + ":changes"
        let (subscribed, lost) = (Counter(), Counter())
        _ = subscriber.subscribe(Array(channel.utf8), onSubscribed: { subscribed.increment() }, onLost: { lost.increment() }, onMessage: { _ in })
        #expect(await eventually { subscribed.value == 1 })
        #expect(try await client.send(["SET", key, "before"]) == .simple("OK"))
        let victim = try cluster.primary(of: HashSlot.of(key))
        victim.stop()

        // Commands fail with typed errors while the cluster notices, then the
        // same client finds the promoted replica.
        var errors: [RedisError] = []
        let recovered = await eventually(within: 30) {
            let result = await withCheckedContinuation { done in
                client.send(["SET", key, "after"], deadline: .now + .milliseconds(500)) { done.resume(returning: $0) }
            }
            if case .failure(let error) = result { errors.append(error) }
            return (try? result.get()) == .simple("OK")
        }
        #expect(recovered, "errors seen: \(Set(errors))")
        #expect(try await client.send(["GET", key]) == .bulk(Array("after".utf8)))
        #expect(await eventually { lost.value == 1 && subscribed.value == 2 })
        #expect(try await client.send(["SPUBLISH", channel, "after"]) == .integer(1))
        try cluster.waitUntilHealthy()
    }
}

/// A lone cluster node, apart from the shared cluster.
struct RedisClusterDownTests {
    @Test func aClusterThatServesNoSlotSaysSoWithATypedError() async throws {
        // A lone cluster node with no slots assigned: its cluster is down.
        let node = try RedisServer([], clusterNode: true)
        let lone = RedisClient(seeds: [node.node])
        defer { lone.close() }
        #expect(await eventually { lone.topology == .cluster })
        // A read: were its last try still out when the deadline passes, the
        // refusal that sent it again is the answer, not a bare timeout.
        let result = await withCheckedContinuation { done in
            lone.send(["GET", "anything"], idempotent: true) { done.resume(returning: $0) }
        }
        guard case .failure(.clusterDown(let message)) = result else {
            Issue.record("expected CLUSTERDOWN, got \(result)")
            return
        }
        #expect(message.hasPrefix("CLUSTERDOWN"))
    }
}
