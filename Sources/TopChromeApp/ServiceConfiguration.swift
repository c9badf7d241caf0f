import AccessTokens
#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import MicroHTTPD
import Redis
import SessionSnapshots
import TopChromeAPI
import TopChromeCore

/// Everything an operator can set, from flags or their `TOPCHROME_*`
/// environment twins (flags win, so a one-off run can override a container's environment).
/// The initial values here are the defaults, which `--help` reads
/// (``ServiceConfiguration/Option``).
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
    /// Connections from one client address at most; 0 = no limit. An app
    /// holds two (its event stream and its requests); the rest is room for
    /// devices behind one NAT. Trusted proxies are exempt.
    public var maxConnectionsPerIP = 64
    /// Seconds a request's head and body may take to arrive; past them 408.
    public var requestTimeout = 10.0
    /// Bytes per connection for the request line and headers (larger get 431).
    public var connectionMemory = 8192
    /// Seconds between heartbeat comments on event streams.
    public var heartbeatSeconds = 15
    public var maxWatchers = 10_000
    /// Sessions one client address (an IPv6 /64) may create a second, and
    /// at once; more get 429. 0: no limit. See `CreationRatePolicy` for why these.
    public var createRate = 20
    public var createBurst = 200
    public var maxWatchersPerSession = 64
    /// Longest long-poll (`Prefer: wait=N`) honoured, in seconds.
    public var maxWaitSeconds = 60
    /// When set, every /v1 request must carry `Authorization: Bearer <token>`.
    /// Read from a file so the secret never shows in a process list.
    public var authToken: String?
    /// Where `authToken` was read, read again on reload (SIGHUP) so the token rotates without a restart.
    public var authTokenFile: String?
    /// When set, `/metrics` answers only a request carrying this token (or
    /// `authToken`): a scraper's own secret, which opens nothing else.
    public var metricsToken: String?
    /// Where `metricsToken` was read, read again on reload as `authTokenFile` is.
    public var metricsTokenFile: String?
    /// Access tokens (JWTs) for one session each: see ServiceConfiguration+Tokens.swift.
    /// The JWKS text, checked when read (kept as text so that configurations compare).
    public var tokenKeysJWKS: String?
    /// Where `tokenKeys` was read, read again on reload (SIGHUP) so keys rotate without a restart.
    public var tokenKeysFile: String?
    /// Audience, issuer, leeway and revocation cut-off that tokens are held to.
    public var tokenPolicy = TokenVerifier.Policy()
    /// Certificate (chain) and private key for HTTPS, PEM text read at
    /// parse time so a missing file stops the start at once; both or neither.
    public var tlsCertificatePEM: String?
    public var tlsKeyPEM: String?
    /// Where those were read, read again on reload (SIGHUP) for the same reason.
    public var tlsCertificateFile: String?
    public var tlsKeyFile: String?
    /// The TLS versions, key exchanges and ciphers HTTPS handshakes may use.
    public var tlsPriorities = TLSPriorities.recommended
    /// Where sessions survive restarts; nil keeps them in memory only.
    public var stateFile: String?
    /// Seconds between snapshots to the state file (besides the one at shutdown).
    public var snapshotInterval = 60
    /// When the journal beside the state file is synced (Redis's `appendfsync`).
    public var fsync = FsyncPolicy.everysec
    /// A journal past this many bytes (or past twice the snapshot) starts a
    /// snapshot before its interval, as Redis's `auto-aof-rewrite-min-size`.
    /// Not an option: the default suits; tests lower it.
    public var journalSnapshotBytes = 64 << 20
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
    /// `AUTH` to the sentinels of a `redis-sentinel://` store, their own.
    public var sentinelPassword: String?
    public var sentinelUsername: String?
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
    /// Connections to each Redis node, each read and answered on a thread of
    /// its own (`RedisConfiguration.connectionsPerNode`): one per two cores,
    /// up to 4. More lanes leave fewer cores idle but make each pipeline
    /// shallower, and Redis pays per read: on 2 cores, 2 lanes cost Redis
    /// ~12 % more per call for no CPU saved in the replica (BENCHMARKS.md).
    public var redisConnections = min(4, max(1, ProcessInfo.processInfo.activeProcessorCount / 2))
    /// Origins of web pages allowed to call the API from a browser (CORS),
    /// as browsers send them (`https://app.example.com`); none by default.
    public var corsOrigins: [String] = []

    public init() {}

    /// Nil when `--create-rate` is 0.
    public var creationRate: CreationRatePolicy? {
        createRate > 0 ? CreationRatePolicy(perSecond: createRate, burst: createBurst) : nil
    }

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
        server.requestTimeout = requestTimeout > 0 ? .milliseconds(Int((requestTimeout * 1000).rounded())) : nil
        server.trustedProxies = TrustedProxies(trustedProxies)
        if let certificate = tlsCertificatePEM, let key = tlsKeyPEM {
            server.tls = TLSCredentials(certificatePEM: certificate, privateKeyPEM: key)
        }
        server.tlsPriorities = tlsPriorities
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
        if configuration.tlsCertificatePEM == nil, let source = given["tls-priorities"] {
            throw UsageError(description: "\(source) sets what HTTPS handshakes may use and does nothing without --tls-cert and --tls-key; add them, or remove it")
        }
        try configuration.secureRedis(given)
        // An option that would do nothing with the store chosen is refused:
        // an operator who set it expects it to hold.
        switch configuration.store {
        case .memory:
            if let source = options.lazy.filter(\.redisOnly).compactMap({ given[$0.name] }).first {
                throw UsageError(description: "\(source) is for a Redis store and does nothing with the memory store; add --store redis://HOST:PORT, or remove it")
            }
            if given["state-file"] == nil, let source = given["snapshot-interval"] {
                throw UsageError(description: "\(source) sets how often the state file is written and does nothing without one; add --state-file PATH, or remove it")
            }
            if given["state-file"] == nil, let source = given["fsync"] {
                throw UsageError(description: "\(source) sets when the state file's journal is synced and does nothing without one; add --state-file PATH, or remove it")
            }
        case .redis, .redisSentinel:
            if let source = given["state-file"] {
                throw UsageError(description: "\(source) is for the memory store; Redis keeps sessions itself (RDB or AOF persistence)")
            }
            if let source = given["snapshot-interval"] ?? given["fsync"] {
                throw UsageError(description: "\(source) is for the memory store's state file; Redis keeps sessions itself (RDB or AOF persistence)")
            }
            if let source = given["max-sessions"] {
                throw UsageError(description: "\(source) is for the memory store; a Redis store is bounded by Redis's own maxmemory (with maxmemory-policy noeviction, a full Redis makes creates 503)")
            }
        }
        return .serve(configuration)
    }

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
               topchrome redis-functions list|delete-unused [options]
                                                 (list the libraries of every build on each primary, this
                                                  build's marked; or delete all but this build's)
               topchrome state-file check PATH   (read the state file and its journals as a start would:
                                                  exit 0 readable, 2 damaged, naming each line and byte)
               topchrome state-file repair PATH  (keep every readable session in a new state file,
                                                  the old files kept beside it; the server stopped)
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
        let defaults = ServiceConfiguration()
        let rows = options.map { ("--\($0.name) \($0.placeholder)", "\($0.help(defaults)) [\($0.environmentName)]") }
            + [("--help", "Show this help (also: topchrome help)."), ("--version", "Show the version and the commit built (also: -v, topchrome version).")]
        // The longest flag sets the column, so no description runs into its flag.
        let width = rows.map(\.0.count).max() ?? 0
        for (flag, help) in rows {
            text += "  " + flag + String(repeating: " ", count: width - flag.count + 2) + help + "\n"
        }
        return text
    }
}
