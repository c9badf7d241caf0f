import Foundation
@testable import Redis
import RedisTestSupport
import Testing

/// The slot map follows the cluster without a command meeting the change,
/// and never goes back to a view older than the one it holds. Each test
/// has a cluster of its own: they move slots and stop nodes.
struct ClusterRefreshTests {
    @Test func aSlotMovedWithoutARedirectionIsLearntOnTheTimer() async throws {
        let cluster = try RedisClusterFixture.dedicated(replicasPerPrimary: 0)
        var configuration = RedisConfiguration()
        configuration.slotMapRefreshInterval = .milliseconds(200)
        let client = RedisClient(seeds: cluster.seeds, configuration: configuration)
        defer { client.close() }
        let slot = HashSlot.of(Array("timer".utf8))
        let source = try cluster.primary(of: slot)
        #expect(await eventually { client.node(serving: slot) == source.node })
        let target = try #require(try cluster.primaries().first { $0 !== source })
        let (sourceID, targetID) = (try cluster.nodeID(of: source), try cluster.nodeID(of: target))
        // As `redis-cli --cluster reshard` does (the slot holds no key):
        // the target takes the slot with a new config epoch.
        try redisCLI(port: target.port, "CLUSTER", "SETSLOT", String(slot), "IMPORTING", sourceID)
        try redisCLI(port: source.port, "CLUSTER", "SETSLOT", String(slot), "MIGRATING", targetID)
        for node in [target, source] + (try cluster.primaries().filter { $0 !== target && $0 !== source }) {
            try redisCLI(port: node.port, "CLUSTER", "SETSLOT", String(slot), "NODE", targetID)
        }
        // No command is sent: nothing but the timer can tell the client.
        #expect(await eventually { client.node(serving: slot) == target.node })
    }

    /// A node may drop a connection with nothing out on it (it is going
    /// away): no command fails, yet the map is reloaded.
    @Test func aConnectionDroppedWithNoCommandOutReloadsTheMap() async throws {
        let cluster = try RedisClusterFixture.dedicated(replicasPerPrimary: 0)
        var configuration = RedisConfiguration()
        configuration.slotMapRefreshInterval = .seconds(3600)
        let client = RedisClient(seeds: cluster.seeds, configuration: configuration)
        defer { client.close() }
        #expect(await eventually { client.isConnected })
        let served = { cluster.servers.reduce(0) { $0 + slotMapsServed(by: $1) } }
        try await Task.sleep(for: .milliseconds(300))
        let before = served()
        #expect(before >= 1)
        try redisCLI(port: cluster.servers[0].port, "CLIENT", "KILL", "TYPE", "normal")
        #expect(await eventually { served() > before })
    }

    /// A primary killed, its replica promoted, then the old primary back
    /// while every other node is frozen (as if partitioned away): it still
    /// believes it serves its slots, with its old config epoch. The client
    /// asks it (the others do not answer) and keeps the newer view.
    @Test func aNodeThatMissedAFailoverDoesNotPutItsViewBack() async throws {
        let cluster = try RedisClusterFixture.dedicated()
        var configuration = RedisConfiguration()
        configuration.commandTimeout = timeScaled(.milliseconds(300))
        configuration.slotMapRefreshInterval = .milliseconds(200)
        let client = RedisClient(seeds: cluster.seeds, configuration: configuration)
        defer { client.close() }
        let slot = HashSlot.of(Array("stale-view".utf8))
        let old = try cluster.primary(of: slot)
        #expect(await eventually { client.node(serving: slot) == old.node })
        old.stop()
        #expect(await eventually(within: 30) { (try? cluster.primary(of: slot)).map { $0 !== old } ?? false })
        let promoted = try cluster.primary(of: slot)
        #expect(await eventually(within: 10) { client.node(serving: slot) == promoted.node })
        let others = cluster.servers.filter { $0 !== old }
        // The view may have come by a `MOVED`, whose claim has no known epoch
        // and so yields to any answer: wait for two whole refreshes after it,
        // which date the promoted node's claim (on a loaded machine, seen once).
        let servedByOthers = { others.reduce(0) { $0 + slotMapsServed(by: $1) } }
        let refreshesBefore = servedByOthers()
        #expect(await eventually(within: 10) { servedByOthers() >= refreshesBefore + 2 })
        #expect(client.node(serving: slot) == promoted.node)

        for server in others { server.signal(SIGSTOP) }
        let thawed = Counter()
        let thaw = {
            guard thawed.value == 0 else { return }
            thawed.increment()
            for server in others { server.signal(SIGCONT) }
        }
        defer { thaw() }
        try old.restart()
        #expect(try redisCLI(port: old.port, "ROLE").hasPrefix("master"), "the old primary believes it still is one")
        #expect(await eventually(within: 20) { slotMapsServed(by: old) > 0 }, "the client never asked the old primary")
        try await Task.sleep(for: .milliseconds(300))
        #expect(client.node(serving: slot) == promoted.node)

        thaw()
        try cluster.waitUntilHealthy()
    }

    private func slotMapsServed(by server: RedisServer) -> Int {
        let stats = (try? redisCLI(port: server.port, "INFO", "commandstats")) ?? ""
        guard let line = stats.split(whereSeparator: \.isNewline).first(where: { $0.hasPrefix("cmdstat_cluster|slots:") }),
              let calls = line.split(separator: ",").first?.split(separator: "=").last
        else { return 0 }
        return Int(calls) ?? 0
    }
}
