import Redis
import Testing
@testable import TopChromeServer

/// A failover is told where its work went, one line per change, and counted by kind.
@Suite struct RedisTopologyLogTests {
    @Test func eachChangeIsOneLineAndCountedByKind() {
        let log = CapturedLog(.text)
        let topology = RedisTopologyLog(logger: log.logger)
        let a = RedisNode(host: "10.0.0.1", port: 7001), b = RedisNode(host: "10.0.0.2", port: 7002)
        topology.record(.slotsMoved([MovedSlots(slots: 5461...10922, from: a, to: b)]))
        topology.record(.primarySwitched(from: a, to: b))
        topology.record(.rejoinedAsReplica(a))
        topology.record(.rejoinedAsReplica(b))
        log.logger.flush()
        let lines = log.errorLines + log.outputLines
        #expect(lines.count == 4, "\(lines)")
        #expect(lines.contains { $0.contains("Redis cluster slots moved") && $0.contains("to=10.0.0.2:7002") && $0.contains("slots=5462")
            && $0.contains("5461-10922 10.0.0.1:7001 -> 10.0.0.2:7002") })
        #expect(lines.contains { $0.contains("Sentinel named a new Redis primary") && $0.contains("from=10.0.0.1:7001") && $0.contains("to=10.0.0.2:7002") })
        #expect(lines.filter { $0.contains("Redis reachable again") && $0.contains("role=replica") }.count == 2)
        #expect(Dictionary(uniqueKeysWithValues: zip(RedisTopologyLog.kinds, topology.totals))
            == ["slots_moved": 1, "sentinel_switch": 1, "replica_rejoined": 2])
    }
}
