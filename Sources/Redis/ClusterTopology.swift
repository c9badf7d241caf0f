/// Which node serves each slot, as `CLUSTER SLOTS` reports it. Package-wide
/// so the fuzz target can read arbitrary replies with it.
package struct SlotMap {
    /// The primary of each slot; nil for a slot no node serves.
    private(set) var owners: [RedisNode?]

    package var nodes: Set<RedisNode> { Set(owners.compactMap { $0 }) }

    package subscript(slot: Int) -> RedisNode? {
        get { owners[slot] }
        set { owners[slot] = newValue }
    }

    /// Reads a `CLUSTER SLOTS` reply: `[start, end, [host, port, id…], replicas…]`
    /// per range. An empty host means the node that answered. A port that is
    /// not a TCP port refuses the whole reply: no node could be reached
    /// there, and one past Int32 would trap when the client connects.
    package init?(_ reply: RESPValue, answeredBy answering: RedisNode) {
        guard case .array(let ranges) = reply else { return nil }
        owners = Array(repeating: nil, count: HashSlot.count)
        for range in ranges {
            guard case .array(let fields) = range, fields.count >= 3,
                  case .integer(let start) = fields[0], case .integer(let end) = fields[1],
                  0 <= start, start <= end, end < HashSlot.count,
                  case .array(let primary) = fields[2], primary.count >= 2,
                  let host = primary[0].string, case .integer(let port) = primary[1], (1...65535).contains(port)
            else { return nil }
            let node = RedisNode(host: host.isEmpty ? answering.host : host, port: Int(port))
            for slot in Int(start)...Int(end) { owners[slot] = node }
        }
    }
}

/// A cluster's answer that the command's slot is served elsewhere: for good
/// (`MOVED`: update the map) or while the slot migrates (`ASK`: ask that node
/// once, after `ASKING`).
public struct ClusterRedirect: Equatable, Sendable {
    public let asking: Bool
    public let slot: Int
    public let node: RedisNode

    /// Reads `MOVED <slot> <host:port>` or `ASK <slot> <host:port>`; nil for any other error.
    public init?(_ message: String) {
        let words = message.split(separator: " ")
        guard words.count == 3, words[0] == "MOVED" || words[0] == "ASK",
              let slot = Int(words[1]), (0..<HashSlot.count).contains(slot),
              let node = RedisNode(words[2])
        else { return nil }
        asking = words[0] == "ASK"
        self.slot = slot
        self.node = node
    }
}
