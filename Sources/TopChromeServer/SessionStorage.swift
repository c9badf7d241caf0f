import Redis

/// Where sessions live.
public enum SessionStorage: Sendable, Equatable, CustomStringConvertible {
    /// In this process: fast, and gone with it unless a state file keeps them.
    case memory
    /// In Redis, shared by every replica.
    case redis(RedisEndpoints)

    /// As `--store` takes it: `memory`, or the Redis endpoints' address.
    public var description: String {
        switch self {
        case .memory: "memory"
        case let .redis(endpoints): endpoints.description
        }
    }
}

/// Where a Redis store's nodes are found, and whether over TLS: everything
/// `--store` says of Redis, so a client can be made from it alone.
public struct RedisEndpoints: Sendable, Equatable, CustomStringConvertible {
    public enum Nodes: Sendable, Equatable {
        /// A single server, or the seed nodes of a Redis Cluster (which one
        /// is found out at start).
        case seeds([RedisNode])
        /// The primary that these sentinels name for `masterName` (one
        /// primary with replicas, failed over by Sentinel).
        case sentinels([RedisNode], masterName: String)
    }

    /// `redis://` or `rediss://`: TLS to every node, sentinels included,
    /// or to none (half the connections over TLS protect nothing).
    public enum Transport: Sendable, Equatable {
        case plain, tls
    }

    public var nodes: Nodes {
        get { masterName.map { .sentinels(addresses, masterName: $0) } ?? .seeds(addresses) }
        set {
            switch newValue {
            case let .seeds(seeds): (addresses, masterName) = (seeds, nil)
            case let .sentinels(sentinels, name): (addresses, masterName) = (sentinels, name)
            }
        }
    }
    public var transport: Transport
    // Kept as two fields, not as `Nodes`: an enum of two payloads keeps its
    // case in the spare bits of the list's pointer, which LeakSanitizer
    // cannot follow, and so reported a configuration alive at exit as leaked.
    private var addresses: [RedisNode]
    private var masterName: String?

    public init(_ nodes: Nodes, transport: Transport = .plain) {
        addresses = []
        self.transport = transport
        self.nodes = nodes
    }

    /// A single Redis or a cluster's seeds.
    public static func seeds(_ nodes: [RedisNode], transport: Transport = .plain) -> RedisEndpoints {
        RedisEndpoints(.seeds(nodes), transport: transport)
    }

    /// The primary Sentinel names.
    public static func sentinels(_ nodes: [RedisNode], masterName: String, transport: Transport = .plain) -> RedisEndpoints {
        RedisEndpoints(.sentinels(nodes, masterName: masterName), transport: transport)
    }

    /// As `--store` takes it: `redis://HOST:PORT[,HOST:PORT…]` or
    /// `redis-sentinel://HOST:PORT[,HOST:PORT…]/MASTERNAME`, `rediss` over TLS.
    public var description: String {
        func list(_ nodes: [RedisNode]) -> String {
            nodes.map(\.description).joined(separator: ",")
        }
        let scheme = transport == .tls ? "rediss" : "redis"
        return switch nodes {
        case let .seeds(seeds): scheme + "://" + list(seeds)
        case let .sentinels(sentinels, masterName): scheme + "-sentinel://" + list(sentinels) + "/" + masterName
        }
    }
}
