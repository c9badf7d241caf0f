#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import MicroHTTPD
import Redis
import TopChromeCore

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
            nodes.map { $0.host.contains(":") ? "[\($0.host)]:\($0.port)" : "\($0.host):\($0.port)" }.joined(separator: ",")
        }
        return switch self {
        case .memory: "memory"
        case let .redis(nodes): "redis://" + list(nodes)
        case let .redisSentinel(sentinels, masterName): "redis-sentinel://" + list(sentinels) + "/" + masterName
        }
    }
}

/// Everything an operator can set, from flags or their `TOPCHROME_*`
/// environment twins (flags win, so a one-off run can override a container's environment).
public struct ServiceConfiguration: Sendable, Equatable {
    public var host = "127.0.0.1"
    public var port = 8080
    public var threads = max(1, ProcessInfo.processInfo.activeProcessorCount)
    public var maxSessions = 1_000_000
    public var maxBodyBytes = 65_536
    public var revealThreshold = ChromeRules.defaultRevealThreshold
    /// Seconds a session may stay untouched before it is dropped; 0 = never.
    public var sessionTTL = 3600
    /// Seconds a graceful stop waits for in-flight requests.
    public var shutdownTimeout = 10.0
    /// Seconds an idle connection is kept open; 0 = forever.
    public var idleTimeout = 60
    public var maxConnections = 10_000
    /// Connections from one client address at most; 0 = no limit.
    public var maxConnectionsPerIP = 0
    /// Bytes per connection for the request line and headers (larger get 431).
    public var connectionMemory = 8192
    /// Seconds between heartbeat comments on event streams.
    public var heartbeatSeconds = 15
    public var maxWatchers = 10_000
    public var maxWatchersPerSession = 64
    /// Longest long-poll (`Prefer: wait=N`) honoured, in seconds.
    public var maxWaitSeconds = 60
    /// When set, every /v1 request must carry `Authorization: Bearer <token>`.
    /// Read from a file so the secret never shows in a process list.
    public var authToken: String?
    /// Where `authToken` was read, read again on reload (SIGHUP) so the token rotates without a restart.
    public var authTokenFile: String?
    /// Certificate (chain) and private key for HTTPS, PEM text read at
    /// parse time so a missing file stops the start at once; both or neither.
    public var tlsCertificatePEM: String?
    public var tlsKeyPEM: String?
    /// Where those were read, read again on reload (SIGHUP) for the same reason.
    public var tlsCertificateFile: String?
    public var tlsKeyFile: String?
    /// Where sessions survive restarts; nil keeps them in memory only.
    public var stateFile: String?
    /// Seconds between snapshots to the state file (besides the one at shutdown).
    public var snapshotInterval = 60
    public var logFormat = LogFormat.text
    /// `info` logs every request; `warn` only problems.
    public var logLevel = LogLevel.info
    /// Where warnings and errors go: with everything else by default, so a
    /// story told over several lines (Redis lost, then back) reads in order.
    public var logErrorsToStderr = false
    /// Proxies whose `X-Forwarded-For` names the client in the access log.
    public var trustedProxies: [AddressRange] = []
    public var store = SessionStorage.memory
    /// `AUTH` for every Redis connection; read from a file, like the bearer token.
    public var redisPassword: String?
    /// The ACL user `AUTH` names with the password; nil for the default user.
    public var redisUsername: String?
    /// `rediss://`: TLS to every Redis node, made from `--redis-ca-file`,
    /// `--redis-cert` and `--redis-key` once the options are read.
    public var redisTLS: RedisTLS?
    /// Whether `--store` said `rediss://`, and the files TLS is made from.
    var redisOverTLS = false
    var redisCAFile: String?
    var redisCertificateFile: String?
    var redisKeyFile: String?
    /// Put before every key and channel, so several services can share one Redis.
    public var redisKeyPrefix = "topchrome:"
    /// Seconds a request waits for Redis before it gets 503.
    public var redisTimeout = 1.0
    /// Replicas of a session's primary that must hold each change before it
    /// is acknowledged (`WAIT`, up to `redisTimeout`); 0 acknowledges at once.
    public var redisWaitReplicas = 0
    /// Origins of web pages allowed to call the API from a browser (CORS),
    /// as browsers send them (`https://app.example.com`); none by default.
    public var corsOrigins: [String] = []

    public init() {}

    public var httpServer: HTTPServerConfiguration {
        var server = HTTPServerConfiguration()
        server.host = host
        server.port = port
        server.threads = threads
        server.maxBodyBytes = maxBodyBytes
        server.connectionTimeoutSeconds = idleTimeout
        server.maxConnections = maxConnections
        server.connectionMemoryBytes = connectionMemory
        server.maxConnectionsPerAddress = maxConnectionsPerIP
        server.trustedProxies = TrustedProxies(trustedProxies)
        if let certificate = tlsCertificatePEM, let key = tlsKeyPEM {
            server.tls = TLSCredentials(certificatePEM: certificate, privateKeyPEM: key)
        }
        return server
    }

    /// What a command line asked for.
    public enum Command: Equatable, Sendable {
        case serve(ServiceConfiguration)
        case help
        case version
    }

    /// A bad flag or value; the message names it and says what is allowed.
    public struct UsageError: Error, Equatable, CustomStringConvertible {
        public let description: String
    }

    /// Reads `arguments` (without the program name) over `environment`.
    public static func parse(
        arguments: [String], environment: [String: String]
    ) throws(UsageError) -> Command {
        // `topchrome help`, as `git help` and `go help` have it.
        if arguments.first == "help" { return .help }
        // `topchrome version`, likewise; `-v` as most tools read it (never "verbose" here).
        if arguments.first == "version" { return .version }
        var flags: [(Option, String)] = []
        var remaining = arguments[...]
        while let argument = remaining.popFirst() {
            if argument == "--help" || argument == "-h" { return .help }
            if argument == "--version" || argument == "-v" { return .version }
            let (name, inlineValue) = split(argument)
            guard let option = options.first(where: { "--" + $0.name == name }) else {
                throw UsageError(description: "unknown option '\(argument)' (see --help)")
            }
            guard let value = inlineValue ?? remaining.popFirst() else {
                throw UsageError(description: "--\(option.name) needs a value")
            }
            flags.append((option, value))
        }
        var configuration = ServiceConfiguration()
        // The environment first, then flags over it; a variable a flag
        // overrides is not read at all, so its value cannot stop the start.
        let flagged = Set(flags.map(\.0.name))
        /// Where each option given came from, as messages name it.
        var given: [String: String] = [:]
        for option in options where !flagged.contains(option.name) {
            if let value = environment[option.environmentName] {
                try option.apply(value, option.environmentName, &configuration)
                given[option.name] = option.environmentName
            }
        }
        for (option, value) in flags {
            try option.apply(value, "--\(option.name)", &configuration)
            given[option.name] = "--\(option.name)"
        }
        guard (configuration.tlsCertificatePEM == nil) == (configuration.tlsKeyPEM == nil) else {
            throw UsageError(description: "--tls-cert and --tls-key go together")
        }
        try configuration.secureRedis(given)
        // An option that would do nothing with the store chosen is refused:
        // an operator who set it expects it to hold.
        switch configuration.store {
        case .memory:
            if let source = redisOnly.lazy.compactMap({ given[$0] }).first {
                throw UsageError(description: "\(source) is for a Redis store and does nothing with the memory store; add --store redis://HOST:PORT, or remove it")
            }
            if given["state-file"] == nil, let source = given["snapshot-interval"] {
                throw UsageError(description: "\(source) sets how often the state file is written and does nothing without one; add --state-file PATH, or remove it")
            }
        case .redis, .redisSentinel:
            if let source = given["state-file"] {
                throw UsageError(description: "\(source) is for the memory store; Redis keeps sessions itself (RDB or AOF persistence)")
            }
            if let source = given["snapshot-interval"] {
                throw UsageError(description: "\(source) is for the memory store's state file; Redis keeps sessions itself (RDB or AOF persistence)")
            }
            if let source = given["max-sessions"] {
                throw UsageError(description: "\(source) is for the memory store; a Redis store is bounded by Redis's own maxmemory (with maxmemory-policy noeviction, a full Redis makes creates 503)")
            }
        }
        return .serve(configuration)
    }

    /// Options that only a Redis store reads.
    private static let redisOnly = ["redis-password-file", "redis-username", "redis-key-prefix", "redis-timeout", "redis-wait-replicas",
                                    "redis-ca-file", "redis-cert", "redis-key"]

    private static func split(_ argument: String) -> (String, String?) {
        guard argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") else { return (argument, nil) }
        return (String(argument[..<equals]), String(argument[argument.index(after: equals)...]))
    }

    public static var usage: String {
        var text = """
        Usage: topchrome [options]
               topchrome healthcheck [options]   (exit 0 if the server at --host/--port is healthy;
                                                  else exit 1, saying why on stderr)
               topchrome check-config [options]  (check the options, environment, token, TLS and
                                                  state files and the Redis store, without serving:
                                                  exit 0 valid, 2 to fix, 3 Redis not reached)
               topchrome redis-functions load [options]
                                                 (load the Redis function library on every primary of
                                                  --store, so the service may run as a user who only calls it)
               topchrome version                 (also -v, --version: the version and commit)
               topchrome watch [--auth-token-file FILE] URL ID
                                                 (print each state of session ID as it arrives;
                                                  topchrome watch --help says more)

        Serves the top chrome state (inset, isRevealed) of app sessions over HTTP.
        Every option also reads from its environment variable; options win.
        SIGTERM or SIGINT stops gracefully; SIGHUP never stops: it reads the
        token file and the TLS certificate and key again, keeping the old ones
        if the new ones cannot be used, and logs what it did.

        Options:

        """
        let rows = options.map { ("--\($0.name) \($0.placeholder)", "\($0.help) [\($0.environmentName)]") }
            + [("--help", "Show this help (also: topchrome help)."), ("--version", "Show the version and the commit built (also: -v, topchrome version).")]
        // The longest flag sets the column, so no description runs into its flag.
        let width = rows.map(\.0.count).max() ?? 0
        for (flag, help) in rows {
            text += "  " + flag + String(repeating: " ", count: width - flag.count + 2) + help + "\n"
        }
        return text
    }

    private struct Option: Sendable {
        let name: String
        let placeholder: String
        let help: String
        let apply: @Sendable (String, String, inout ServiceConfiguration) throws(UsageError) -> Void

        var environmentName: String {
            "TOPCHROME_" + name.uppercased().replacing("-", with: "_")
        }
    }

    private static let options: [Option] = [
        Option(name: "host", placeholder: "ADDR", help: "Address to listen on (default 127.0.0.1).") { value, source, config throws(UsageError) in
            guard !value.isEmpty else { throw UsageError(description: "\(source) must not be empty") }
            config.host = value
        },
        Option(name: "port", placeholder: "N", help: "TCP port, 0 for any free one (default 8080).") { value, source, config throws(UsageError) in
            config.port = try integer(value, source, in: 0...65_535)
        },
        Option(name: "threads", placeholder: "N", help: "Threads answering requests (default: cores).") { value, source, config throws(UsageError) in
            config.threads = try integer(value, source, in: 1...256)
        },
        Option(name: "max-sessions", placeholder: "N", help: "Sessions held at most; more get 503 (default 1000000).") { value, source, config throws(UsageError) in
            config.maxSessions = try integer(value, source, in: 1...100_000_000)
        },
        Option(name: "max-body-bytes", placeholder: "N", help: "Largest request body; larger gets 413 (default 65536).") { value, source, config throws(UsageError) in
            config.maxBodyBytes = try integer(value, source, in: 2...(64 << 20))
        },
        Option(name: "reveal-threshold", placeholder: "PT", help: "Island shows while offset <= this (default 1).") { value, source, config throws(UsageError) in
            guard let number = Double(value), number.isFinite, abs(number) <= 10_000 else {
                throw UsageError(description: "\(source) must be a number from -10000 to 10000, not '\(value)'")
            }
            config.revealThreshold = number
        },
        Option(name: "session-ttl", placeholder: "S", help: "Seconds idle before a session is dropped; 0 = never (default 3600).") { value, source, config throws(UsageError) in
            config.sessionTTL = try integer(value, source, in: 0...(10 * 365 * 86_400))
        },
        Option(name: "shutdown-timeout", placeholder: "S", help: "Seconds a graceful stop waits for requests (default 10).") { value, source, config throws(UsageError) in
            config.shutdownTimeout = try seconds(value, source, in: 0...3600)
        },
        Option(name: "idle-timeout", placeholder: "S", help: "Seconds an idle connection stays open; 0 = forever (default 60).") { value, source, config throws(UsageError) in
            config.idleTimeout = try integer(value, source, in: 0...86_400)
        },
        Option(name: "max-connections", placeholder: "N", help: "Open connections at most (default 10000).") { value, source, config throws(UsageError) in
            config.maxConnections = try integer(value, source, in: 1...1_000_000)
        },
        Option(name: "max-connections-per-ip", placeholder: "N", help: "Connections from one client address at most; 0 = no limit (default).") { value, source, config throws(UsageError) in
            config.maxConnectionsPerIP = try integer(value, source, in: 0...1_000_000)
        },
        Option(name: "connection-memory", placeholder: "B", help: "Bytes per connection for request line and headers; more gets 431 (default 8192).") { value, source, config throws(UsageError) in
            config.connectionMemory = try integer(value, source, in: 4096...(1 << 20))
        },
        Option(name: "heartbeat", placeholder: "S", help: "Seconds between heartbeats on event streams (default 15).") { value, source, config throws(UsageError) in
            config.heartbeatSeconds = try integer(value, source, in: 1...3600)
        },
        Option(name: "max-watchers", placeholder: "N", help: "Event streams and long-polls at most; more get 503 (default 10000).") { value, source, config throws(UsageError) in
            config.maxWatchers = try integer(value, source, in: 1...1_000_000)
        },
        Option(name: "max-watchers-per-session", placeholder: "N", help: "Watchers of one session at most (default 64).") { value, source, config throws(UsageError) in
            config.maxWatchersPerSession = try integer(value, source, in: 1...100_000)
        },
        Option(name: "max-wait", placeholder: "S", help: "Longest long-poll wait honoured, in seconds (default 60).") { value, source, config throws(UsageError) in
            config.maxWaitSeconds = try integer(value, source, in: 1...3600)
        },
        Option(name: "auth-token-file", placeholder: "PATH", help: "Require 'Authorization: Bearer <token>' on /v1, token read from PATH (again on SIGHUP).") { value, source, config throws(UsageError) in
            config.authToken = try bearerToken(inFile: value, source)
            config.authTokenFile = value
        },
        Option(name: "tls-cert", placeholder: "PATH", help: "Serve HTTPS with this PEM certificate (chain); read again on SIGHUP.") { value, source, config throws(UsageError) in
            config.tlsCertificatePEM = try contents(of: value, source)
            config.tlsCertificateFile = value
        },
        Option(name: "tls-key", placeholder: "PATH", help: "The PEM private key for --tls-cert; read again on SIGHUP.") { value, source, config throws(UsageError) in
            config.tlsKeyPEM = try contents(of: value, source)
            config.tlsKeyFile = value
        },
        Option(name: "log-format", placeholder: "F", help: "Log lines as 'text' (default) or 'json'.") { value, source, config throws(UsageError) in
            guard let format = LogFormat(rawValue: value) else {
                throw UsageError(description: "\(source) must be text or json, not '\(value)'")
            }
            config.logFormat = format
        },
        Option(name: "log-level", placeholder: "L", help: "debug, info (default; one line per request), warn or error.") { value, source, config throws(UsageError) in
            guard let level = LogLevel(name: value) else {
                throw UsageError(description: "\(source) must be debug, info, warn or error, not '\(value)'")
            }
            config.logLevel = level
        },
        Option(name: "log-errors-to", placeholder: "S", help: "Where warn and error lines go: stdout (default, with the rest) or stderr.") { value, source, config throws(UsageError) in
            guard value == "stdout" || value == "stderr" else {
                throw UsageError(description: "\(source) must be stdout or stderr, not '\(value)'")
            }
            config.logErrorsToStderr = value == "stderr"
        },
        Option(name: "trusted-proxy", placeholder: "CIDR", help: "Log the client X-Forwarded-For names when the peer is in CIDR (repeatable, or comma-separated).") { value, source, config throws(UsageError) in
            for text in value.split(separator: ",", omittingEmptySubsequences: false) {
                guard let range = AddressRange(text) else {
                    throw UsageError(description: "\(source) must be addresses or CIDR blocks (10.0.0.0/8, ::1), comma-separated, not '\(text)'")
                }
                config.trustedProxies.append(range)
            }
        },
        Option(name: "state-file", placeholder: "PATH", help: "Keep sessions across restarts in PATH (written atomically).") { value, source, config throws(UsageError) in
            guard !value.isEmpty else { throw UsageError(description: "\(source) must not be empty") }
            config.stateFile = value
        },
        Option(name: "store", placeholder: "S", help: "'memory' (default), redis://HOST:PORT[,HOST:PORT...]: Redis or a Redis Cluster's seeds (rediss:// over TLS), or redis-sentinel://HOST:PORT[,HOST:PORT...]/MASTERNAME: the primary Sentinel names (no TLS); shared by replicas.") { value, source, config throws(UsageError) in
            config.store = try storage(value, source)
            config.redisOverTLS = value.hasPrefix("rediss://")
        },
        Option(name: "redis-password-file", placeholder: "PATH", help: "AUTH to Redis with the password in PATH.") { value, source, config throws(UsageError) in
            config.redisPassword = try redisPassword(inFile: value, source)
        },
        Option(name: "redis-username", placeholder: "U", help: "The Redis ACL user to AUTH as (with --redis-password-file).") { value, source, config throws(UsageError) in
            guard !value.isEmpty, value.unicodeScalars.allSatisfy({ (0x21...0x7E).contains($0.value) }) else {
                throw UsageError(description: "\(source) must be a Redis user name: printable ASCII without spaces, not '\(value)'")
            }
            config.redisUsername = value
        },
        Option(name: "redis-ca-file", placeholder: "PATH", help: "For rediss://: the PEM CA certificates Redis's certificate must chain to (default: the system's).") { value, _, config in
            config.redisCAFile = value
        },
        Option(name: "redis-cert", placeholder: "PATH", help: "For rediss://: a PEM client certificate (chain), for a Redis that checks clients.") { value, _, config in
            config.redisCertificateFile = value
        },
        Option(name: "redis-key", placeholder: "PATH", help: "For rediss://: the PEM private key of --redis-cert.") { value, _, config in
            config.redisKeyFile = value
        },
        Option(name: "redis-key-prefix", placeholder: "P", help: "Prefix of Redis keys and channels (default topchrome:).") { value, source, config throws(UsageError) in
            guard !value.isEmpty, !value.contains("{"), !value.contains("}"), value.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
                throw UsageError(description: "\(source) must be printable ASCII without spaces or braces, not '\(value)'")
            }
            config.redisKeyPrefix = value
        },
        Option(name: "redis-timeout", placeholder: "S", help: "Seconds a request waits for Redis before 503 (default 1).") { value, source, config throws(UsageError) in
            config.redisTimeout = try seconds(value, source, in: 0.01...60)
        },
        Option(name: "redis-wait-replicas", placeholder: "N", help: "Redis replicas that must have each change before it is acknowledged, else 503 (default 0).") { value, source, config throws(UsageError) in
            config.redisWaitReplicas = try integer(value, source, in: 0...16)
        },
        Option(name: "cors-origin", placeholder: "ORIGIN", help: "Let web pages from ORIGIN (scheme://host[:port]) call the API from a browser; repeatable (the variable: a list separated by commas or spaces).") { value, source, config throws(UsageError) in
            for origin in try crossOrigins(value, source) where !config.corsOrigins.contains(origin) {
                config.corsOrigins.append(origin)
            }
        },
        Option(name: "snapshot-interval", placeholder: "S", help: "Seconds between state-file snapshots (default 60).") { value, source, config throws(UsageError) in
            config.snapshotInterval = try integer(value, source, in: 1...86_400)
        },
    ]
}
