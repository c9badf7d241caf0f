import Foundation
import Redis
import Testing
@testable import TopChromeServer

/// `--store` and the options that belong to one store: how an address is
/// read, and an option the chosen store never reads refused, not ignored.
@Suite struct StoreOptionTests {
    @Test func redisWaitReplicasFromFlagOrEnvironment() throws {
        let redis = ["--store", "redis://127.0.0.1:6379"]
        #expect(try serve(redis).redis.waitReplicas == 0)
        #expect(try serve(redis + ["--redis-wait-replicas", "2"]).redis.waitReplicas == 2)
        #expect(try serve(redis + ["--redis-wait-replicas=16"]).redis.waitReplicas == 16)
        #expect(try serve(redis, ["TOPCHROME_REDIS_WAIT_REPLICAS": "1"]).redis.waitReplicas == 1)
        #expect(try serve(redis + ["--redis-wait-replicas", "0"], ["TOPCHROME_REDIS_WAIT_REPLICAS": "3"]).redis.waitReplicas == 0)
    }

    @Test func redisConnectionsFollowTheCoresUnlessSet() throws {
        let redis = ["--store", "redis://127.0.0.1:6379"]
        let cores = ProcessInfo.processInfo.activeProcessorCount
        #expect(try serve(redis).redis.connections == min(4, max(1, cores / 2)))
        #expect(try serve(redis).redis.client.connectionsPerNode == min(4, max(1, cores / 2)))
        #expect(try serve(redis + ["--redis-connections", "8"]).redis.client.connectionsPerNode == 8)
        #expect(try serve(redis, ["TOPCHROME_REDIS_CONNECTIONS": "1"]).redis.connections == 1)
        #expect(throws: ServiceConfiguration.UsageError.self) { try serve(redis + ["--redis-connections", "0"]) }
    }

    /// An option the chosen store never reads is refused, not ignored: the
    /// operator who set it expects it to hold. The message says why and what to do.
    @Test(arguments: [("redis-password-file", "PASSWORD_FILE"), ("redis-key-prefix", "KEY_PREFIX"),
                      ("redis-timeout", "TIMEOUT"), ("redis-wait-replicas", "WAIT_REPLICAS"),
                      ("redis-connections", "CONNECTIONS")])
    func redisOptionsAreRefusedWithTheMemoryStore(_ option: String, _ variable: String) throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("password-\(UUID().uuidString)")
        try "s3cret\n".write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let value = ["redis-password-file": file.path, "redis-key-prefix": "app:", "redis-timeout": "2",
                     "redis-wait-replicas": "1", "redis-connections": "2"][option]!
        let hint = "is for a Redis store and does nothing with the memory store; add --store redis://HOST:PORT, or remove it"
        #expect(throws: ServiceConfiguration.UsageError(description: "--\(option) \(hint)")) {
            try serve(["--\(option)", value])
        }
        #expect(throws: ServiceConfiguration.UsageError(description: "TOPCHROME_REDIS_\(variable) \(hint)")) {
            try serve(["--store", "memory"], ["TOPCHROME_REDIS_\(variable)": value])
        }
        #expect(try serve(["--store", "redis://h:1", "--\(option)", value]).store != .memory)
        #expect(try serve([], ["TOPCHROME_STORE": "redis://h:1", "TOPCHROME_REDIS_\(variable)": value]).store != .memory)
    }

    @Test func maxSessionsIsRefusedWithARedisStore() throws {
        let message = "is for the memory store; a Redis store is bounded by Redis's own maxmemory (with maxmemory-policy noeviction, a full Redis makes creates 503)"
        #expect(throws: ServiceConfiguration.UsageError(description: "--max-sessions \(message)")) {
            try serve(["--store", "redis://h:1", "--max-sessions", "5"])
        }
        #expect(throws: ServiceConfiguration.UsageError(description: "TOPCHROME_MAX_SESSIONS \(message)")) {
            try serve([], ["TOPCHROME_STORE": "redis://h:1", "TOPCHROME_MAX_SESSIONS": "5"])
        }
        #expect(try serve(["--max-sessions", "5"]).limits.maxSessions == 5)
    }

    /// The state file and its snapshots are the memory store's; Redis
    /// persists by itself. The message names the variable when the value
    /// came from the environment, as every other refusal does.
    @Test(arguments: [("state-file", "sessions.state", "is for the memory store; Redis keeps sessions itself (RDB or AOF persistence)"),
                      ("snapshot-interval", "30", "is for the memory store's state file; Redis keeps sessions itself (RDB or AOF persistence)")])
    func stateFileOptionsAreRefusedWithARedisStore(_ option: String, _ value: String, _ message: String) throws {
        let variable = "TOPCHROME_" + option.uppercased().replacing("-", with: "_")
        #expect(throws: ServiceConfiguration.UsageError(description: "--\(option) \(message)")) {
            try serve(["--store", "redis://h:1", "--\(option)", value])
        }
        #expect(throws: ServiceConfiguration.UsageError(description: "\(variable) \(message)")) {
            try serve(["--store", "redis://h:1"], [variable: value])
        }
        #expect(throws: ServiceConfiguration.UsageError(description: "\(variable) \(message)")) {
            try serve([], ["TOPCHROME_STORE": "redis://h:1", variable: value])
        }
        // (A snapshot interval needs a state file with the memory store too.)
        var environment = ["TOPCHROME_STATE_FILE": "sessions.state"]
        environment[variable] = value
        #expect(try serve(["--state-file", "sessions.state", "--\(option)", value]).store == .memory)
        #expect(try serve([], environment).store == .memory)
    }

    /// Snapshots are of the state file: without one the interval would hold nothing.
    @Test func aSnapshotIntervalWithoutAStateFileIsRefused() throws {
        let message = "sets how often the state file is written and does nothing without one; add --state-file PATH, or remove it"
        #expect(throws: ServiceConfiguration.UsageError(description: "--snapshot-interval \(message)")) {
            try serve(["--snapshot-interval", "30"])
        }
        #expect(throws: ServiceConfiguration.UsageError(description: "TOPCHROME_SNAPSHOT_INTERVAL \(message)")) {
            try serve([], ["TOPCHROME_SNAPSHOT_INTERVAL": "30"])
        }
        #expect(try serve(["--snapshot-interval", "30"], ["TOPCHROME_STATE_FILE": "s.state"]).stateFile.snapshotInterval == 30)
        #expect(try serve(["--state-file", "s.state"], ["TOPCHROME_SNAPSHOT_INTERVAL": "30"]).stateFile.snapshotInterval == 30)
    }


    /// A host without a port: Redis has none a client may assume, and the message shows the form.
    @Test(arguments: [("redis://h", "h"), ("redis://a:1,b", "b"), ("redis://[::1]", "[::1]"), ("redis://redis.internal", "redis.internal")])
    func aRedisAddressWithoutAPortSaysSo(_ value: String, _ address: String) {
        #expect(throws: ServiceConfiguration.UsageError(
            description: "--store: '\(address)' needs a port, as in redis://\(address):6379 (the form is redis://HOST:PORT[,HOST:PORT...])")) {
            try serve(["--store", value])
        }
    }

    @Test(arguments: ["17", "-1", "two", "1.5", "", " 1"])
    func redisWaitReplicasMustBeAWholeNumberUpTo16(_ value: String) {
        #expect {
            try serve(["--redis-wait-replicas", value])
        } throws: { error in
            let message = (error as? ServiceConfiguration.UsageError)?.description ?? ""
            return message.contains("--redis-wait-replicas") && message.contains("0 to 16")
        }
        #expect(throws: ServiceConfiguration.UsageError.self) {
            try serve([], ["TOPCHROME_REDIS_WAIT_REPLICAS": value])
        }
    }

    @Test func redisStoreAddresses() throws {
        func nodes(_ configuration: ServiceConfiguration) -> [String]? {
            guard case let .redis(endpoints) = configuration.store, case let .seeds(nodes) = endpoints.nodes else { return nil }
            return nodes.map { "\($0.host) \($0.port)" }
        }
        #expect(try serve(["--store", "memory"]).store == .memory)
        #expect(nodes(try serve(["--store", "redis://127.0.0.1:6379"])) == ["127.0.0.1 6379"])
        #expect(nodes(try serve(["--store", "redis://[::1]:6379,redis.internal:7000"])) == ["::1 6379", "redis.internal 7000"])
        #expect(nodes(try serve([], ["TOPCHROME_STORE": "redis://h:1"])) == ["h 1"])
    }

    @Test func sentinelStoreAddresses() throws {
        func parts(_ storage: SessionStorage) -> [String]? {
            guard case let .redis(endpoints) = storage, case let .sentinels(sentinels, masterName) = endpoints.nodes else { return nil }
            return sentinels.map { "\($0.host) \($0.port)" } + [masterName]
        }
        let one = try serve(["--store", "redis-sentinel://127.0.0.1:26379/mymaster"]).store
        #expect(parts(one) == ["127.0.0.1 26379", "mymaster"])
        #expect(one.description == "redis-sentinel://127.0.0.1:26379/mymaster")
        let three = try serve([], ["TOPCHROME_STORE": "redis-sentinel://a:1,[::1]:2,b.internal:3/cache-1"]).store
        #expect(parts(three) == ["a 1", "::1 2", "b.internal 3", "cache-1"])
        #expect(three.description == "redis-sentinel://a:1,[::1]:2,b.internal:3/cache-1")
    }

    /// A sentinel store needs sentinels with ports and the master's name;
    /// each mistake says which form is wanted.
    @Test(arguments: [
        ("redis-sentinel://h:26379", "--store: 'redis-sentinel://h:26379' needs the name of the master the sentinels watch, as in redis-sentinel://h:26379/mymaster (the form is redis-sentinel://HOST:PORT[,HOST:PORT...]/MASTERNAME)"),
        ("redis-sentinel://h:26379/", "--store: '' is not a master name Sentinel takes: printable, no spaces (the form is redis-sentinel://HOST:PORT[,HOST:PORT...]/MASTERNAME)"),
        ("redis-sentinel://h:26379/my master", "--store: 'my master' is not a master name Sentinel takes: printable, no spaces (the form is redis-sentinel://HOST:PORT[,HOST:PORT...]/MASTERNAME)"),
        ("redis-sentinel://h/mymaster", "--store: 'h' needs a port, as in redis-sentinel://h:26379/mymaster (the form is redis-sentinel://HOST:PORT[,HOST:PORT...]/MASTERNAME)"),
        ("redis-sentinel:///mymaster", "--store must be redis-sentinel://HOST:PORT[,HOST:PORT...]/MASTERNAME, not 'redis-sentinel:///mymaster'"),
        ("redis-sentinel://h:0/mymaster", "--store must be redis-sentinel://HOST:PORT[,HOST:PORT...]/MASTERNAME, not 'redis-sentinel://h:0/mymaster'"),
        ("redis-sentinel://fe80::1/mymaster", "--store must be redis-sentinel://HOST:PORT[,HOST:PORT...]/MASTERNAME, not 'redis-sentinel://fe80::1/mymaster'"),
        ("redis-sentinel://a:1,,b:2/m", "--store must be redis-sentinel://HOST:PORT[,HOST:PORT...]/MASTERNAME, not 'redis-sentinel://a:1,,b:2/m'"),
    ])
    func badSentinelStoresAreRefused(_ value: String, _ message: String) {
        #expect(throws: ServiceConfiguration.UsageError(description: message)) {
            try serve(["--store", value])
        }
    }

    @Test func sentinelStoresTakeTheRedisOptions() throws {
        let configuration = try serve(["--store", "redis-sentinel://h:1/m", "--redis-timeout", "2", "--redis-key-prefix", "x:"])
        #expect(configuration.redis.timeout == 2 && configuration.redis.keyPrefix == "x:")
        #expect(throws: ServiceConfiguration.UsageError.self) {
            try serve(["--store", "redis-sentinel://h:1/m", "--max-sessions", "5"])
        }
    }

    /// Nothing a reader could take for another address gets through: an
    /// IPv6 address must be in brackets (`fe80::1` is not host `fe80:`, port 1),
    /// a host has no spaces, a port is digits only.
    @Test(arguments: ["redis://", "redis://:1", "memory,redis://127.0.0.1:6379", "redis://h:0",
                      "redis://h:65536", "redis://h:1,", "redis://a:1,,b:2", "REDIS://h:1", "redis://h:1/0",
                      "redis://fe80::1", "redis://::1:6379", "redis://a b:1", "redis:// h:1", "redis://h:1 ", "redis://h:+1",
                      "redis://h:0x10", "redis://[::1]:6379]", "redis://[]:1", "redis://user@h:1", "redis://h\t:1"])
    func badRedisStoreAddressesAreRefused(_ value: String) {
        #expect {
            try serve(["--store", value])
        } throws: { error in
            (error as? ServiceConfiguration.UsageError)?.description.contains("--store must be memory or redis://") == true
        }
    }
}
