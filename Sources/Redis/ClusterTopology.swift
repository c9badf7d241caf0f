/// Which node serves each slot, as `CLUSTER SLOTS` reports it, and with
/// which config epoch each node claims its slots, as `CLUSTER NODES`
/// reports it (see SlotMap+Freshness.swift). Package-wide so the fuzz
/// target can read arbitrary replies with it.
package struct SlotMap {
    /// The primary of each slot; nil for a slot no node serves.
    var claims: [SlotClaim?]
    /// The config epoch of each primary the answer named, as far as known:
    /// a node's epoch only grows, so a claim it makes later has at least this one.
    var epochs: [RedisNode: UInt64]

    package var nodes: Set<RedisNode> { Set(claims.compactMap { $0?.node }) }

    /// The slot's primary; set by a `MOVED`, whose claim carries the epoch
    /// known of that node, if any.
    package subscript(slot: Int) -> RedisNode? {
        get { claims[slot]?.node }
        set { claims[slot] = newValue.map { SlotClaim(node: $0, epoch: epochs[$0]) } }
    }

    /// Reads a `CLUSTER SLOTS` reply: `[start, end, [host, port, id…], replicas…]`
    /// per range. An empty host means the node that answered. A port that is
    /// not a TCP port refuses the whole reply: no node could be reached
    /// there, and one past Int32 would trap when the client connects.
    /// `configEpochs` (node id to epoch, from `CLUSTER NODES`) dates each
    /// claim; without it the map's claims are of unknown age.
    package init?(_ reply: RESPValue, answeredBy answering: RedisNode, configEpochs: [String: UInt64] = [:]) {
        guard case .array(let ranges) = reply else { return nil }
        claims = Array(repeating: nil, count: HashSlot.count)
        epochs = [:]
        for range in ranges {
            guard case .array(let fields) = range, fields.count >= 3,
                  case .integer(let start) = fields[0], case .integer(let end) = fields[1],
                  0 <= start, start <= end, end < HashSlot.count,
                  case .array(let primary) = fields[2], primary.count >= 2,
                  let host = primary[0].string, case .integer(let port) = primary[1], (1...65535).contains(port)
            else { return nil }
            let node = RedisNode(host: host.isEmpty ? answering.host : host, port: Int(port))
            let epoch = primary.count > 2 ? primary[2].string.flatMap { configEpochs[$0] } : nil
            if let epoch { epochs[node] = epoch }
            let claim = SlotClaim(node: node, epoch: epoch)
            for slot in Int(start)...Int(end) { claims[slot] = claim }
        }
    }
}

/// A node's claim to serve a slot, with the config epoch it claims it
/// with (nil when not known: the answer had no epochs, or came by `MOVED`).
struct SlotClaim: Equatable {
    let node: RedisNode
    let epoch: UInt64?
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
