/// Which of two views of a cluster to trust, slot by slot, as the nodes
/// themselves settle it: a slot's claim with the higher config epoch wins.
/// A node that was partitioned away or just restarted answers the view it
/// had before a failover, whose promoted replica claims the slots with a
/// higher epoch; installing that view would send commands back to the old
/// primary (now a replica, or gone) until the next `MOVED`.
extension SlotMap {
    /// This map updated with a newer answer: each slot takes the answer's
    /// claim unless that claim is known to be older than the one held (both
    /// epochs known, the answer's lower). A slot the answer says no node
    /// serves keeps its known primary, who answers `MOVED` or `CLUSTERDOWN`
    /// if it lost it: a node that just lost its configuration knows of no slot.
    /// Claims of unknown age are replaced by any answer, as are equal epochs
    /// (the answer is the later word).
    package func updated(with answer: SlotMap) -> SlotMap {
        var merged = self
        for slot in claims.indices {
            guard let offered = answer.claims[slot] else { continue }
            if let held = claims[slot], let heldEpoch = held.epoch, let offeredEpoch = offered.epoch, offeredEpoch < heldEpoch {
                continue
            }
            merged.claims[slot] = offered
        }
        merged.epochs.merge(answer.epochs, uniquingKeysWith: max)
        return merged
    }

    /// A refresh's answer: `CLUSTER SLOTS`, dated by the `CLUSTER NODES`
    /// sent behind it, and the replicas that are up. Nil unless both came
    /// back: a node that answered the first and went silent before the
    /// second (frozen, cut off, dying) would give an undated view, which
    /// replaces dated claims, and may be the very view the epochs keep out.
    /// A refusal of `CLUSTER NODES` (an ACL without it) is an answer: a map
    /// of unknown age.
    package static func refreshed(
        slots: Result<RESPValue, RedisError>, nodes: Result<RESPValue, RedisError>, answeredBy node: RedisNode
    ) -> (map: SlotMap, reachableReplicas: Set<RedisNode>)? {
        guard case .success(let slotsReply) = slots, case .success(let nodesReply) = nodes else { return nil }
        let text = nodesReply.string
        let epochs = text.map { configEpochs(clusterNodes: $0) } ?? [:]
        guard let map = SlotMap(slotsReply, answeredBy: node, configEpochs: epochs) else { return nil }
        return (map, text.map { reachableReplicas(clusterNodes: $0) } ?? [])
    }

    /// Each node's config epoch (the seventh field of each line of
    /// `CLUSTER NODES`: `id address flags primary ping pong epoch link slots…`),
    /// by node id; lines that do not read so are skipped.
    package static func configEpochs(clusterNodes text: String) -> [String: UInt64] {
        var epochs: [String: UInt64] = [:]
        for line in text.split(whereSeparator: \.isNewline) {
            let fields = line.split(separator: " ", maxSplits: 7)
            guard fields.count >= 7, let epoch = UInt64(fields[6]) else { continue }
            epochs[String(fields[0])] = epoch
        }
        return epochs
    }
}
