import Foundation
import Redis

/// A Redis Cluster of 3 primaries and 3 replicas on loopback, started once
/// per test run (creating one takes seconds) and killed at exit.
final class RedisClusterFixture: Sendable {
    let servers: [RedisServer]

    /// The cluster, started by the first test that asks for it.
    static func shared() throws -> RedisClusterFixture {
        try started.get()
    }

    private static let started = Result { try RedisClusterFixture() }

    private init() throws {
        servers = try (0..<6).map { _ in
            try RedisServer([
                "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                "--cluster-node-timeout", "2000",
            ])
        }
        try redisCLI(["--cluster", "create"] + servers.map { "127.0.0.1:\($0.port)" } + ["--cluster-replicas", "1", "--cluster-yes"])
        let deadline = Date().addingTimeInterval(30)
        while !(try servers.allSatisfy({ try redisCLI(port: $0.port, "CLUSTER", "INFO").contains("cluster_state:ok") })) {
            guard Date() < deadline else { throw RedisTestSetupError(description: "the test cluster did not reach cluster_state:ok within 30 s") }
            usleep(50_000)
        }
    }

    var seeds: [RedisNode] { [servers[0].node] }

    /// The servers still running that are primaries now (a failover changes them).
    func primaries() throws -> [RedisServer] {
        try servers.filter { server in
            guard server.pid != nil else { return false }
            return try redisCLI(port: server.port, "ROLE").hasPrefix("master")
        }
    }

    /// The running server that is the primary of `slot` now.
    func primary(of slot: Int) throws -> RedisServer {
        for server in try primaries() {
            let myself = try nodeID(of: server)
            let nodes = try redisCLI(port: server.port, "CLUSTER", "NODES")
            guard let line = nodes.split(separator: "\n").first(where: { $0.hasPrefix(myself) }) else { continue }
            let ranges = line.split(separator: " ").dropFirst(8)
            for range in ranges where !range.hasPrefix("[") {
                let bounds = range.split(separator: "-").compactMap { Int($0) }
                if let low = bounds.first, let high = bounds.last, (low...high).contains(slot) { return server }
            }
        }
        throw RedisTestSetupError(description: "no running primary serves slot \(slot)")
    }

    func nodeID(of server: RedisServer) throws -> String {
        try redisCLI(port: server.port, "CLUSTER", "MYID").trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
