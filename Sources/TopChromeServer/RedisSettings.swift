#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import Redis
import RedisSessionStore

/// How the service reaches a Redis store (`--store redis://…`): who it is
/// (`AUTH`, to the nodes and to the sentinels), over what (TLS), under
/// which keys, how long it waits, and on how many connections.
public struct RedisSettings: Sendable, Equatable {
    /// `AUTH` for every Redis connection; read from a file, like the bearer token.
    public var password: String?
    /// The ACL user `AUTH` names with the password; nil for the default user.
    public var username: String?
    /// `AUTH` to the sentinels of a `redis-sentinel://` store, their own.
    public var sentinelPassword: String?
    public var sentinelUsername: String?
    /// `rediss://`: TLS to every Redis node, made from `caFile`,
    /// `certificateFile` and `keyFile` once the options are read.
    public var tls: RedisTLS?
    var caFile: String?
    var certificateFile: String?
    var keyFile: String?
    /// Put before every key and channel, so several services can share one Redis.
    public var keyPrefix = "topchrome:"
    /// Seconds a request waits for Redis before it gets 503.
    public var timeout = 1.0
    /// Replicas of a session's primary that must hold each change before it
    /// is acknowledged (`WAIT`, up to `timeout`); 0 acknowledges at once.
    public var waitReplicas = 0
    /// Connections to each Redis node, each read and answered on a thread of
    /// its own (`RedisConfiguration.connectionsPerNode`): one per two cores,
    /// up to 4. More lanes leave fewer cores idle but make each pipeline
    /// shallower, and Redis pays per read: on 2 cores, 2 lanes cost Redis
    /// ~12 % more per call for no CPU saved in the replica (BENCHMARKS.md).
    public var connections = min(4, max(1, ProcessInfo.processInfo.activeProcessorCount / 2))

    /// `timeout`, for every part that waits for Redis: the client's
    /// commands, a watcher's channel, replicas' acknowledgements.
    var commandTimeout: Duration {
        .milliseconds(Int((timeout * 1000).rounded(.up)))
    }

    /// What the service sends as configured (a cluster's commands are
    /// added where the node says it is one).
    public var permissionsNeeded: Set<RedisPermission.Need> {
        waitReplicas > 0 ? [.always, .waitingForReplicas] : [.always]
    }

    /// `topchrome:<host>:<pid>`: which process a connection in Redis's
    /// `CLIENT LIST` is (a name may hold no spaces).
    static let clientName: String = {
        var host = [CChar](repeating: 0, count: 256)
        let name = gethostname(&host, host.count) == 0 ? String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "unknown"
        return "topchrome:\(name.filter { !$0.isWhitespace }):\(getpid())"
    }()

    /// The Redis client's configuration for the service, `check-config` and
    /// `redis-functions load` alike: each connects as the service would.
    public var client: RedisConfiguration {
        var redis = RedisConfiguration()
        redis.username = username
        redis.password = password
        redis.sentinelUsername = sentinelUsername
        redis.sentinelPassword = sentinelPassword
        redis.tls = tls
        redis.commandTimeout = commandTimeout
        redis.connectionsPerNode = connections
        redis.clientName = Self.clientName
        redis.libraryNameAndVersion = ("topchrome", TopChromeService.version)
        return redis
    }

    /// The checks of the user and TLS options once all are read, and the
    /// TLS context made: a CA or key that OpenSSL cannot use stops the start.
    mutating func secure(_ store: SessionStorage, _ given: [String: String]) throws(ServiceConfiguration.UsageError) {
        if username != nil, password == nil, let source = given["redis-username"] {
            throw .init(description: "\(source) needs --redis-password-file: AUTH takes the user's password with its name")
        }
        guard (certificateFile == nil) == (keyFile == nil) else {
            throw .init(description: "--redis-cert and --redis-key go together")
        }
        if sentinelUsername != nil, sentinelPassword == nil, let source = given["sentinel-username"] {
            throw .init(description: "\(source) needs --sentinel-password-file: AUTH takes the user's password with its name")
        }
        let endpoints: RedisEndpoints? = if case let .redis(endpoints) = store { endpoints } else { nil }
        let followsSentinel = if case .sentinels = endpoints?.nodes { true } else { false }
        if let source = given["sentinel-password-file"] ?? given["sentinel-username"], !followsSentinel {
            throw .init(description: "\(source) is for the sentinels of a redis-sentinel:// store; --store names none")
        }
        let tlsOption = ["redis-ca-file", "redis-cert", "redis-key"].lazy.compactMap({ given[$0] }).first
        guard let endpoints else { return }
        guard endpoints.transport == .tls else {
            if let source = tlsOption {
                let (plain, secure) = followsSentinel ? ("redis-sentinel://", "rediss-sentinel://HOST:PORT/MASTERNAME") : ("redis://", "rediss://HOST:PORT")
                throw .init(description: "\(source) is for TLS to Redis and does nothing with \(plain); use --store \(secure), or remove it")
            }
            return
        }
        do {
            tls = try RedisTLS(caFile: caFile, certificateFile: certificateFile, keyFile: keyFile)
        } catch {
            throw .init(description: "TLS to Redis: \(error)")
        }
    }
}
