import Foundation
import Redis

/// A Redis Cluster of 3 primaries on loopback, each with a replica or not,
/// started once per test run (creating one takes seconds) and killed at exit.
public final class RedisClusterFixture: Sendable {
    public let servers: [RedisServer]

    /// 3 primaries and 3 replicas, started by the first test that asks for
    /// it. Tests using it may kill a primary or move slots: they are
    /// serialized (`RedisClusterTests`), and a test that cannot wait out a
    /// failover takes a cluster of its own.
    public static func shared() throws -> RedisClusterFixture {
        try started.get()
    }

    /// 3 primaries without replicas, for tests that need a cluster's slot
    /// routing but not failovers: quicker to start, and never disturbed by
    /// the drills run on the shared one.
    public static func primariesOnly() throws -> RedisClusterFixture {
        try startedPrimariesOnly.get()
    }

    /// A cluster of its own (3 primaries, a replica each unless told), for a drill that
    /// must not disturb the tests sharing `shared()` while they run; its
    /// servers stop when it is released.
    public static func dedicated(replicasPerPrimary: Int = 1) throws -> RedisClusterFixture {
        try starting(replicasPerPrimary: replicasPerPrimary)
    }

    private static let started = Result { try starting(replicasPerPrimary: 1) }
    private static let startedPrimariesOnly = Result { try starting(replicasPerPrimary: 0) }

    /// A node's free port (or its cluster bus port) can be taken by another
    /// server starting at the same moment, when tests start servers in
    /// parallel; then the whole cluster is made again.
    private static func starting(replicasPerPrimary: Int) throws -> RedisClusterFixture {
        var attempt = 1
        while true {
            do {
                return try RedisClusterFixture(replicasPerPrimary: replicasPerPrimary)
            } catch where attempt < 3 {
                attempt += 1
            }
        }
    }

    private init(replicasPerPrimary: Int) throws {
        servers = try (0..<(3 * (1 + replicasPerPrimary))).map { _ in
            // Replicas sync at once (not after the default 5 s), so that a
            // primary killed early has a replica able to take over.
            try RedisServer(["--cluster-node-timeout", "2000", "--repl-diskless-sync-delay", "0"], clusterNode: true)
        }
        try redisCLI(["--cluster", "create"] + servers.map { "127.0.0.1:\($0.port)" } + ["--cluster-replicas", String(replicasPerPrimary), "--cluster-yes"])
        try waitUntilHealthy()
        let deadline = Date().addingTimeInterval(30)
        for server in servers {
            while try redisCLI(port: server.port, "ROLE").hasPrefix("slave"),
                  !(try redisCLI(port: server.port, "INFO", "replication").contains("master_link_status:up")) {
                guard Date() < deadline else { throw RedisTestSetupError(description: "a replica of the test cluster did not sync within 30 s") }
                usleep(50_000)
            }
        }
        // And online as each primary sees it (after a diskless sync, only once
        // the replica's first acknowledgement came): until then `WAIT` counts it not.
        for server in servers where replicasPerPrimary > 0 {
            while try redisCLI(port: server.port, "ROLE").hasPrefix("master"),
                  try redisCLI(port: server.port, "INFO", "replication").components(separatedBy: "state=online").count - 1 < replicasPerPrimary {
                guard Date() < deadline else { throw RedisTestSetupError(description: "a replica of the test cluster is not online within 30 s") }
                usleep(50_000)
            }
        }
    }

    /// Every server still running: a test may have killed one.
    public var seeds: [RedisNode] { servers.filter { $0.pid != nil }.map(\.node) }

    /// Waits until every running node says the cluster is ok (after a failover).
    public func waitUntilHealthy(within seconds: Double = 30) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while !(try servers.filter({ $0.pid != nil }).allSatisfy({ try redisCLI(port: $0.port, "CLUSTER", "INFO").contains("cluster_state:ok") })) {
            guard Date() < deadline else { throw RedisTestSetupError(description: "the test cluster is not ok after \(seconds) s") }
            usleep(50_000)
        }
    }

    /// The servers still running that are primaries now (a failover changes them).
    public func primaries() throws -> [RedisServer] {
        try servers.filter { server in
            guard server.pid != nil else { return false }
            return try redisCLI(port: server.port, "ROLE").hasPrefix("master")
        }
    }

    /// The running server that is the primary of `slot` now.
    public func primary(of slot: Int) throws -> RedisServer {
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

    /// The id of the node that `server` believes serves `slot`, if any.
    public func owner(of slot: Int, asSeenBy server: RedisServer) throws -> String? {
        for line in try redisCLI(port: server.port, "CLUSTER", "NODES").split(separator: "\n") {
            let fields = line.split(separator: " ")
            for range in fields.dropFirst(8) where !range.hasPrefix("[") {
                let bounds = range.split(separator: "-").compactMap { Int($0) }
                if let low = bounds.first, let high = bounds.last, (low...high).contains(slot) { return fields.first.map(String.init) }
            }
        }
        return nil
    }

    /// Waits until every replica of `primary` has acknowledged all it was
    /// sent (replication is asynchronous: a primary killed before that
    /// takes its last writes with it).
    public func waitUntilReplicated(from primary: RedisServer, within seconds: Double = 30) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            let info = try redisCLI(port: primary.port, "INFO", "replication")
            let fields = info.split(whereSeparator: \.isNewline)
            let sent = fields.first { $0.hasPrefix("master_repl_offset:") }.flatMap { Int($0.split(separator: ":")[1]) }
            // slave0:ip=…,port=…,state=online,offset=N,lag=…
            let acknowledged = fields.filter { $0.hasPrefix("slave") && $0.contains("offset=") }.compactMap { line in
                line.split(separator: ",").first { $0.hasPrefix("offset=") }.flatMap { Int($0.dropFirst("offset=".count)) }
            }
            if let sent, !acknowledged.isEmpty, acknowledged.allSatisfy({ $0 >= sent }) { return }
            guard Date() < deadline else { throw RedisTestSetupError(description: "the replicas of \(primary.port) did not catch up within \(seconds) s") }
            usleep(20_000)
        }
    }

    public func nodeID(of server: RedisServer) throws -> String {
        try redisCLI(port: server.port, "CLUSTER", "MYID").trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
