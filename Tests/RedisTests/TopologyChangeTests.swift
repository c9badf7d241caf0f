@testable import Redis
import Testing

/// What a failover is told as: the ranges of slots that changed primary,
/// and the replicas the cluster reports up (a lost primary back).
struct TopologyChangeTests {
    private let answering = RedisNode(host: "10.0.0.9", port: 7009)
    private let a = RedisNode(host: "10.0.0.1", port: 7001)
    private let b = RedisNode(host: "10.0.0.2", port: 7002)
    private let c = RedisNode(host: "10.0.0.3", port: 7003)

    private func view(_ ranges: [(ClosedRange<Int>, RedisNode)]) throws -> SlotMap {
        let reply = RESPValue.array(ranges.map { slots, node in
            .array([.integer(Int64(slots.lowerBound)), .integer(Int64(slots.upperBound)),
                    .array([.bulk(Array(node.host.utf8)), .integer(Int64(node.port))])])
        })
        return try #require(SlotMap(reply, answeredBy: answering))
    }

    @Test func movesAreRunsOfSlotsFromOneNodeToAnother() throws {
        let before = try view([(0...5460, a), (5461...10922, b), (10923...16383, c)])
        let after = try view([(0...5460, a), (5461...10922, c), (10923...16383, c)])
        #expect(before.moves(to: after) == [MovedSlots(slots: 5461...10922, from: b, to: c)])
        #expect(before.moves(to: before).isEmpty)

        let split = try view([(0...99, b), (100...199, c), (200...5460, a), (5461...10922, b), (10923...16383, c)])
        #expect(before.moves(to: split) == [MovedSlots(slots: 0...99, from: a, to: b), MovedSlots(slots: 100...199, from: a, to: c)])
        #expect(MovedSlots(slots: 0...99, from: a, to: b).description == "0-99 10.0.0.1:7001 -> 10.0.0.2:7002")
        #expect(MovedSlots(slots: 7...7, from: nil, to: b).description == "7 unserved -> 10.0.0.2:7002")
    }

    @Test func aSlotTheNewerViewLeavesUnservedIsNoMove() throws {
        let before = try view([(0...16383, a)])
        let partial = try view([(0...99, b)])
        #expect(before.moves(to: partial) == [MovedSlots(slots: 0...99, from: a, to: b)])
        let empty = try #require(SlotMap(.array([]), answeredBy: answering))
        #expect(before.moves(to: empty).isEmpty)
        #expect(empty.moves(to: before) == [MovedSlots(slots: 0...16383, from: nil, to: a)])
    }

    @Test func reachableReplicasAreTheConnectedOnesNotFailing() {
        let text = """
        e1 10.0.0.1:7001@17001 myself,master - 0 0 1 connected 0-5460
        e2 10.0.0.2:7002@17002,redis-b.example slave e1 0 1700000000000 1 connected
        e3 10.0.0.3:7003@17003 slave,fail e1 1700000000000 1700000000000 1 disconnected
        e4 10.0.0.4:7004@17004 slave,fail? e1 0 1700000000000 1 connected
        e5 ::1:7005@17005 slave e1 0 1700000000000 1 connected
        e6 10.0.0.6:7006@17006 slave e1 0 1700000000000 1 disconnected
        e7 :0@0 slave,noaddr e1 0 0 1 connected
        """
        #expect(SlotMap.reachableReplicas(clusterNodes: text) == [b, RedisNode(host: "::1", port: 7005)])
    }
}
