import Locking
import Redis

/// Failovers told and counted: which slots moved to which node, the primary
/// Sentinel named, a lost primary back as a replica. One line per change
/// (the client tells changes, not commands), and a count per kind for
/// `/metrics`: a connection lost alone says a node went away, not where
/// its work went.
final class RedisTopologyLog: @unchecked Sendable {
    static let kinds = ["slots_moved", "sentinel_switch", "replica_rejoined"]

    private let logger: Logger
    private let lock = PthreadLock()
    // Guarded by `lock`.
    private var counts = [Int](repeating: 0, count: RedisTopologyLog.kinds.count)

    init(logger: Logger) {
        self.logger = logger
    }

    var totals: [Int] { lock.withLock { counts } }

    func record(_ change: RedisTopologyChange) {
        let kind: Int
        switch change {
        case .slotsMoved(let moves):
            kind = 0
            // A node's slots are one line; a map that changed everywhere (a
            // resharding) stays one line too, its ranges in the field.
            let nodes = Set(moves.map(\.to)).sorted { $0.description < $1.description }
            logger.log(.warn, "Redis cluster slots moved", [
                "to": .string(nodes.map(\.description).joined(separator: " ")),
                "slots": .int(moves.reduce(0) { $0 + $1.slots.count }),
                "moves": .string(moves.prefix(Self.rangesLogged).map(\.description).joined(separator: ", ")
                    + (moves.count > Self.rangesLogged ? ", …" : "")),
            ])
        case let .primarySwitched(from, to):
            kind = 1
            logger.log(.warn, "Sentinel named a new Redis primary", ["from": .string(from.description), "to": .string(to.description)])
        case .rejoinedAsReplica(let node):
            kind = 2
            logger.log(.info, "Redis reachable again", ["node": .string(node.description), "role": .string("replica")])
        }
        lock.withLock { counts[kind] += 1 }
    }

    /// Ranges written out in a line; the count of slots covers them all.
    private static let rangesLogged = 16
}
