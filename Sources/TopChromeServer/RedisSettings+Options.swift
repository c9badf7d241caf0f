/// The options of a Redis store, `--store` first.
extension RedisSettings {
    typealias UsageError = ServiceConfiguration.UsageError

    static let options: [ServiceConfiguration.Option] = [
        .init(name: "store", placeholder: "S", help: "'memory', redis://HOST:PORT[,HOST:PORT...]: Redis or a Redis Cluster's seeds (rediss:// over TLS), or redis-sentinel://HOST:PORT[,HOST:PORT...]/MASTERNAME: the primary Sentinel names (rediss-sentinel:// over TLS); shared by replicas (default '{default}').", default: { $0.store.description }) { value, source, config throws(UsageError) in
            config.store = try ServiceConfiguration.storage(value, source)
        },
        .init(name: "redis-password-file", placeholder: "PATH", help: "AUTH to Redis with the password in PATH.", redisOnly: true) { value, source, config throws(UsageError) in
            config.redis.password = try ServiceConfiguration.redisPassword(inFile: value, source)
        },
        .init(name: "redis-username", placeholder: "U", help: "The Redis ACL user to AUTH as (with --redis-password-file).", redisOnly: true) { value, source, config throws(UsageError) in
            config.redis.username = try userName(value, source)
        },
        .init(name: "sentinel-password-file", placeholder: "PATH", help: "For redis-sentinel://: AUTH to the sentinels with the password in PATH (their requirepass, or --sentinel-username's).", redisOnly: true) { value, source, config throws(UsageError) in
            config.redis.sentinelPassword = try ServiceConfiguration.redisPassword(inFile: value, source)
        },
        .init(name: "sentinel-username", placeholder: "U", help: "For redis-sentinel://: the sentinels' ACL user to AUTH as (with --sentinel-password-file).", redisOnly: true) { value, source, config throws(UsageError) in
            config.redis.sentinelUsername = try userName(value, source)
        },
        .init(name: "redis-ca-file", placeholder: "PATH", help: "For rediss://: the PEM CA certificates Redis's certificate must chain to (default: the system's).", redisOnly: true) { value, _, config in
            config.redis.caFile = value
        },
        .init(name: "redis-cert", placeholder: "PATH", help: "For rediss://: a PEM client certificate (chain), for a Redis that checks clients.", redisOnly: true) { value, _, config in
            config.redis.certificateFile = value
        },
        .init(name: "redis-key", placeholder: "PATH", help: "For rediss://: the PEM private key of --redis-cert.", redisOnly: true) { value, _, config in
            config.redis.keyFile = value
        },
        .init(name: "redis-key-prefix", placeholder: "P", help: "Prefix of Redis keys and channels (default {default}).", default: { $0.redis.keyPrefix }, redisOnly: true) { value, source, config throws(UsageError) in
            guard !value.isEmpty, !value.contains("{"), !value.contains("}"), value.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
                throw UsageError(description: "\(source) must be printable ASCII without spaces or braces, not '\(value)'")
            }
            config.redis.keyPrefix = value
        },
        .number("redis-timeout", "S", help: "Seconds a request waits for Redis before 503 (default {default}).", \.redis.timeout, in: 0.01...60, redisOnly: true),
        .number("redis-wait-replicas", "N", help: "Redis replicas that must have each change before it is acknowledged, else 503 (default {default}).",
                \.redis.waitReplicas, in: 0...16, redisOnly: true),
        .number("redis-connections", "N", help: "Connections to each Redis node, each answered on a thread of its own (default: one per two cores, up to 4; here {default}).",
                \.redis.connections, in: 1...64, redisOnly: true),
    ]

    /// A Redis user name as `AUTH` takes it.
    private static func userName(_ value: String, _ source: String) throws(UsageError) -> String {
        guard !value.isEmpty, value.unicodeScalars.allSatisfy({ (0x21...0x7E).contains($0.value) }) else {
            throw UsageError(description: "\(source) must be a Redis user name: printable ASCII without spaces, not '\(value)'")
        }
        return value
    }
}
