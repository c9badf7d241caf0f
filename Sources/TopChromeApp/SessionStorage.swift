import Redis

/// Where sessions live.
public enum SessionStorage: Sendable, Equatable, CustomStringConvertible {
    /// In this process: fast, and gone with it unless a state file keeps them.
    case memory
    /// In Redis, shared by every replica: a single server, or the seed
    /// nodes of a Redis Cluster (which one is found out at start).
    case redis([RedisNode])
    /// In Redis, on the primary that these sentinels name for `masterName`
    /// (one primary with replicas, failed over by Sentinel).
    case redisSentinel(sentinels: [RedisNode], masterName: String)

    /// As `--store` takes it: `memory`, `redis://HOST:PORT[,HOST:PORT…]`, or
    /// `redis-sentinel://HOST:PORT[,HOST:PORT…]/MASTERNAME`.
    public var description: String {
        func list(_ nodes: [RedisNode]) -> String {
            nodes.map(\.description).joined(separator: ",")
        }
        return switch self {
        case .memory: "memory"
        case let .redis(nodes): "redis://" + list(nodes)
        case let .redisSentinel(sentinels, masterName): "redis-sentinel://" + list(sentinels) + "/" + masterName
        }
    }
}
