/// A change of which node serves what, as an operator wants to hear of it
/// in a failover: a connection lost says only that a node went away; this
/// says where its work went, and when it came back in another role.
public enum RedisTopologyChange: Sendable, Equatable {
    /// A cluster's slot map, reloaded, moved these ranges of slots to another
    /// primary (a failover, or slots migrated); `from` is nil for slots no
    /// node served before.
    case slotsMoved([MovedSlots])
    /// Sentinel named another primary (`+switch-master`, or a sentinel asked
    /// after a lost connection).
    case primarySwitched(from: RedisNode, to: RedisNode)
    /// A node that served as a primary, was lost and left the slot map is
    /// reachable again, now as a replica (as the cluster itself reports it).
    case rejoinedAsReplica(RedisNode)
}

/// A range of slots that changed primary.
public struct MovedSlots: Sendable, Equatable, CustomStringConvertible {
    public let slots: ClosedRange<Int>
    public let from: RedisNode?
    public let to: RedisNode

    public init(slots: ClosedRange<Int>, from: RedisNode?, to: RedisNode) {
        self.slots = slots
        self.from = from
        self.to = to
    }

    public var description: String {
        let range = slots.count == 1 ? "\(slots.lowerBound)" : "\(slots.lowerBound)-\(slots.upperBound)"
        return "\(range) \(from.map { "\($0)" } ?? "unserved") -> \(to)"
    }
}

extension SlotMap {
    /// The ranges of slots whose primary differs in `newer`: each run of
    /// consecutive slots moved from one node to one node is one range.
    /// A slot `newer` leaves unserved is no move (the map keeps its primary).
    package func moves(to newer: SlotMap) -> [MovedSlots] {
        var moves: [MovedSlots] = []
        var slot = 0
        while slot < claims.count {
            let before = claims[slot]?.node
            guard let after = newer.claims[slot]?.node, after != before else {
                slot += 1
                continue
            }
            let start = slot
            while slot + 1 < claims.count, claims[slot + 1]?.node == before, newer.claims[slot + 1]?.node == after { slot += 1 }
            moves.append(MovedSlots(slots: start...slot, from: before, to: after))
            slot += 1
        }
        return moves
    }

    /// The replicas a `CLUSTER NODES` text says are up: flagged `slave`, not
    /// `fail`/`fail?`, with a connected link
    /// (`id host:port@bus[,hostname] flags primary ping pong epoch link slots…`).
    package static func reachableReplicas(clusterNodes text: String) -> Set<RedisNode> {
        var replicas: Set<RedisNode> = []
        for line in text.split(whereSeparator: \.isNewline) {
            let fields = line.split(separator: " ", maxSplits: 8)
            guard fields.count >= 8, fields[7] == "connected" else { continue }
            let flags = fields[2].split(separator: ",")
            guard flags.contains("slave"), !flags.contains(where: { $0.hasPrefix("fail") }) else { continue }
            let address = fields[1].prefix { $0 != "@" && $0 != "," }
            guard let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]),
                  (1...65535).contains(port) else { continue }
            var host = address[..<colon]
            if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }
            guard !host.isEmpty else { continue }
            replicas.insert(RedisNode(host: String(host), port: port))
        }
        return replicas
    }
}
