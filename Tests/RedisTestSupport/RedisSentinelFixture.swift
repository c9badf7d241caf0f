import Foundation
import Redis

/// One primary, one replica and one sentinel watching them (`mymaster`,
/// quorum 1), on loopback; killed when released. Each fixture is its own:
/// a `SENTINEL FAILOVER` drill changes which server is the primary.
public final class RedisSentinelFixture: Sendable {
    public static let masterName = "mymaster"
    public let primary: RedisServer
    public let replica: RedisServer
    public let sentinel: RedisServer

    /// - Parameter serverArguments: more settings for both data servers
    ///   (either may become the primary), e.g. `--min-replicas-to-write 1`.
    public init(serverArguments: [String] = []) throws {
        // Replicas sync at once, so that a failover right after the start
        // finds one in sync.
        primary = try RedisServer(["--repl-diskless-sync-delay", "0"] + serverArguments)
        replica = try RedisServer(["--repl-diskless-sync-delay", "0", "--replicaof", "127.0.0.1", String(primary.port)] + serverArguments)
        sentinel = try RedisServer(sentinelConfiguration: """
            sentinel monitor \(Self.masterName) 127.0.0.1 \(primary.port) 1
            sentinel down-after-milliseconds \(Self.masterName) 1000
            sentinel failover-timeout \(Self.masterName) 5000

            """)
        let deadline = Date().addingTimeInterval(30)
        // Synced, known to the sentinel as a replica it may promote, and,
        // under `min-replicas-to-write`, counted good by the primary (from
        // the replica's first ack, up to a second after the sync; before
        // it, a write such as FUNCTION LOAD is refused with NOREPLICAS).
        while try !redisCLI(port: replica.port, "INFO", "replication").contains("master_link_status:up")
            || !redisCLI(port: sentinel.port, "SENTINEL", "replicas", Self.masterName).contains("\(replica.port)")
            || redisCLI(port: primary.port, "INFO", "replication").contains("min_slaves_good_slaves:0") {
            guard Date() < deadline else { throw RedisTestSetupError(description: "the sentinel fixture's replica did not sync and show within 30 s") }
            usleep(50_000)
        }
    }

    public var sentinelNode: RedisNode { sentinel.node }

    /// The port of the primary the sentinel names now.
    public func primaryPort() throws -> Int? {
        Int(try redisCLI(port: sentinel.port, "SENTINEL", "get-master-addr-by-name", Self.masterName)
            .split(separator: "\n").last.map(String.init) ?? "")
    }

    /// Waits until the replica has everything the primary wrote so far:
    /// `SENTINEL FAILOVER` promotes it at once, and what it had not yet
    /// received is gone (asynchronous replication), which a slow machine
    /// makes likely right after a write.
    public func waitUntilReplicaCaughtUp(within seconds: Double = 10) throws {
        func offset(_ port: Int, _ field: String) throws -> Int? {
            try redisCLI(port: port, "INFO", "replication").split(whereSeparator: \.isNewline)
                .first { $0.hasPrefix(field + ":") }.flatMap { Int($0.dropFirst(field.count + 1)) }
        }
        let written = try offset(primary.port, "master_repl_offset") ?? 0
        let deadline = Date().addingTimeInterval(seconds)
        while try (offset(replica.port, "slave_repl_offset") ?? -1) < written {
            guard Date() < deadline else { throw RedisTestSetupError(description: "the replica did not reach offset \(written) within \(seconds) s") }
            usleep(20_000)
        }
    }

    /// `SENTINEL FAILOVER`, asked again while the sentinel is not ready for
    /// one (it refuses while it has not yet heard of a promotable replica),
    /// then waits until it names the other server.
    public func failOver(within seconds: Double = 30) throws {
        let before = try primaryPort()
        let deadline = Date().addingTimeInterval(seconds)
        while try redisCLI(port: sentinel.port, "SENTINEL", "FAILOVER", Self.masterName).hasPrefix("ERR") {
            guard Date() < deadline else { throw RedisTestSetupError(description: "SENTINEL FAILOVER refused for \(seconds) s") }
            usleep(200_000)
        }
        // A failover the sentinel gave up (it found no good replica at that
        // moment, on a loaded machine) is asked for again every 5 s; one
        // still in progress answers INPROG, which changes nothing.
        var askedAt = Date()
        while try primaryPort() == before {
            guard Date() < deadline else { throw RedisTestSetupError(description: "the sentinel did not name a new primary within \(seconds) s") }
            if Date().timeIntervalSince(askedAt) > 5 {
                _ = try redisCLI(port: sentinel.port, "SENTINEL", "FAILOVER", Self.masterName)
                askedAt = Date()
            }
            usleep(50_000)
        }
    }
}
