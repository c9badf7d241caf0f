@testable import Redis
import Testing

/// Which view of a cluster the client keeps when two disagree: the one
/// whose claim of each slot has the higher config epoch, as the nodes
/// themselves settle it.
struct SlotMapFreshnessTests {
    private let answering = RedisNode(host: "10.0.0.9", port: 7009)
    private let a = RedisNode(host: "10.0.0.1", port: 7001)
    private let b = RedisNode(host: "10.0.0.2", port: 7002)

    /// `CLUSTER SLOTS` giving each range to a node named by its id.
    private func view(_ ranges: [(ClosedRange<Int>, RedisNode, String)], epochs: [String: UInt64]) throws -> SlotMap {
        try #require(SlotMap(slotsReply(ranges), answeredBy: answering, configEpochs: epochs))
    }

    private func slotsReply(_ ranges: [(ClosedRange<Int>, RedisNode, String)]) -> RESPValue {
        .array(ranges.map { slots, node, id in
            .array([.integer(Int64(slots.lowerBound)), .integer(Int64(slots.upperBound)),
                    .array([.bulk(Array(node.host.utf8)), .integer(Int64(node.port)), .bulk(Array(id.utf8))])])
        })
    }

    /// A node frozen (or cut off) between the two replies of a refresh: its
    /// `CLUSTER SLOTS` came, its `CLUSTER NODES` never did. That undated view
    /// would replace the dated claims, and a node that missed a failover
    /// could then put its own back; so it is no answer, and the next node is asked.
    @Test func aViewWhoseDatingNeverCameIsNoAnswer() throws {
        let slots = slotsReply([(0...16383, a, "a")])
        for lost in [RedisError.connectionLost, .timeout, .unavailable] {
            #expect(SlotMap.refreshed(slots: .success(slots), nodes: .failure(lost), answeredBy: answering) == nil)
        }
        let nodes = RESPValue.bulk(Array("a 10.0.0.1:7001@17001 master - 0 0 5 connected 0-16383\n".utf8))
        #expect(SlotMap.refreshed(slots: .failure(.connectionLost), nodes: .success(nodes), answeredBy: answering) == nil)

        let dated = try #require(SlotMap.refreshed(slots: .success(slots), nodes: .success(nodes), answeredBy: answering))
        #expect(dated.map.claims[0] == SlotClaim(node: a, epoch: 5))
        // Refused by an ACL without it: an answer all the same, of unknown age.
        let refused = SlotMap.refreshed(slots: .success(slots), nodes: .success(.error("NOPERM no permission")), answeredBy: answering)
        #expect(refused?.map.claims[0] == SlotClaim(node: a, epoch: nil))
    }

    @Test func aClaimOfAnOlderEpochDoesNotReplaceANewerOne() throws {
        // `b` took slots 0...99 over in a failover (epoch 7); a node that
        // missed it still says `a` (epoch 5) has them.
        let held = try view([(0...99, b, "b"), (100...16383, a, "a")], epochs: ["a": 5, "b": 7])
        let stale = try view([(0...16383, a, "a")], epochs: ["a": 5, "b": 3])
        let kept = held.updated(with: stale)
        #expect(kept[0] == b && kept[99] == b && kept[100] == a)

        let newer = try view([(0...16383, a, "a")], epochs: ["a": 8])
        #expect(held.updated(with: newer)[0] == a)
        let equal = try view([(0...99, a, "a"), (100...16383, b, "b")], epochs: ["a": 7, "b": 7])
        #expect(held.updated(with: equal)[0] == a, "an equal epoch is the later word")
    }

    @Test func claimsOfUnknownAgeGiveWayToAnyAnswer() throws {
        let held = try view([(0...16383, a, "a")], epochs: [:])
        let answer = try view([(0...16383, b, "b")], epochs: ["b": 1])
        #expect(held.updated(with: answer)[0] == b)
        // An answer without `CLUSTER NODES` (refused by an ACL) replaces dated claims too.
        let dated = try view([(0...16383, a, "a")], epochs: ["a": 9])
        #expect(dated.updated(with: try view([(0...16383, b, "b")], epochs: [:]))[0] == b)
    }

    @Test func aSlotTheAnswerGivesToNoNodeKeepsItsPrimary() throws {
        let held = try view([(0...16383, a, "a")], epochs: ["a": 2])
        // A node that lost its configuration (reset, or a fresh disk) knows of no slot.
        let forgetful = try view([(0...99, b, "b")], epochs: ["b": 3])
        let map = held.updated(with: forgetful)
        #expect(map[0] == b && map[100] == a && map.nodes == [a, b])
    }

    /// A `MOVED` names the slot's new primary without an epoch; the epoch
    /// known of that node bounds its claim from below, so a stale answer
    /// does not send the slot back.
    @Test func aMovedClaimTakesTheEpochKnownOfItsNode() throws {
        var held = try view([(0...99, a, "a"), (100...16383, b, "b")], epochs: ["a": 5, "b": 6])
        held[0] = b
        let stale = try view([(0...99, a, "a"), (100...16383, b, "b")], epochs: ["a": 5, "b": 6])
        #expect(held.updated(with: stale)[0] == b)
        held[1] = RedisNode(host: "10.0.0.3", port: 7003)
        #expect(held.updated(with: stale)[1] == a, "a node of unknown epoch claims with an unknown epoch")
    }

    @Test func configEpochsAreReadFromClusterNodes() {
        let text = """
            e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 127.0.0.1:30001@31001 myself,master - 0 0 1 connected 0-5460
            67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1 127.0.0.1:30002@31002,host.example master - 0 1426238316232 2 connected 5461-10922 [10923->-e7d1]
            292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f 127.0.0.1:30004@31004 slave e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 0 1426238317741 1 connected
            garbage
            6ec23923021cf3ffec47632106199cb7f496ce01 127.0.0.1:30005@31005 master,fail - 0 0 nine connected

            """
        #expect(SlotMap.configEpochs(clusterNodes: text) == [
            "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca": 1,
            "67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1": 2,
            "292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f": 1,
        ])
    }
}
