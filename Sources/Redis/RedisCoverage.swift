/// How much of the keyspace can be served now. A cluster that lost one
/// primary still serves the slots of the others: a service that goes
/// unready for the missing third would be taken out of its load balancer
/// whole, and turn a partial outage into a full one.
extension RedisClient {
    /// Slots whose primary is not connected, or that no node serves; for a
    /// single Redis, every slot while it is not connected, else none.
    public var unservedSlots: Int {
        let (topology, slots, home, connected) = coverage()
        guard topology != .unknown else { return HashSlot.count }
        guard let slots else { return connected.contains(home) ? 0 : HashSlot.count }
        return (0..<HashSlot.count).count { slot in slots[slot].map { !connected.contains($0) } ?? true }
    }

    /// Whether some part of the keyspace can be served now: a connected
    /// single Redis, or a cluster with at least one connected primary
    /// serving slots.
    public var servesAnySlot: Bool {
        let (topology, slots, home, connected) = coverage()
        guard topology != .unknown else { return false }
        guard let slots else { return connected.contains(home) }
        return !slots.nodes.isDisjoint(with: connected)
    }
}
