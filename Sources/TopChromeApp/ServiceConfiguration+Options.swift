import MicroHTTPD
import SessionSnapshots

/// Every option: its flag, environment variable, help, default and parser
/// in one declaration each, which `parse`, `usage` and the defaults all read.
extension ServiceConfiguration {
    /// One option, declared once: its flag (and from it its environment
    /// variable), its help, where its default is read, and how its value is
    /// read into a configuration.
    struct Option: Sendable {
        let name: String
        let placeholder: String
        /// `{default}` stands where the default goes, read by `default`
        /// from a configuration as `init()` makes it, so help cannot state
        /// another default than the property's.
        private let help: String
        let `default`: (@Sendable (ServiceConfiguration) -> String)?
        /// Read by a Redis store only, so refused with the memory store.
        let redisOnly: Bool
        let apply: @Sendable (String, String, inout ServiceConfiguration) throws(UsageError) -> Void

        init(name: String, placeholder: String, help: String, default: (@Sendable (ServiceConfiguration) -> String)? = nil,
             redisOnly: Bool = false,
             apply: @escaping @Sendable (String, String, inout ServiceConfiguration) throws(UsageError) -> Void) {
            self.name = name
            self.placeholder = placeholder
            self.help = help
            self.default = `default`
            self.redisOnly = redisOnly
            self.apply = apply
        }

        var environmentName: String {
            "TOPCHROME_" + name.uppercased().replacing("-", with: "_")
        }

        /// The help, with the default `defaults` holds.
        func help(_ defaults: ServiceConfiguration) -> String {
            guard let `default` else { return help }
            return help.replacing("{default}", with: `default`(defaults))
        }
    }

    /// Seconds and points as help shows them: whole ones without a fraction.
    fileprivate static func shown(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }

    static let options: [Option] = [
        Option(name: "host", placeholder: "ADDR", help: "Address to listen on (default {default}).", default: { $0.host }) { value, source, config throws(UsageError) in
            guard !value.isEmpty else { throw UsageError(description: "\(source) must not be empty") }
            config.host = value
        },
        Option(name: "port", placeholder: "N", help: "TCP port, 0 for any free one (default {default}).", default: { "\($0.port)" }) { value, source, config throws(UsageError) in
            config.port = try integer(value, source, in: 0...65_535)
        },
        Option(name: "threads", placeholder: "N", help: "Threads answering requests (default: cores).") { value, source, config throws(UsageError) in
            config.threads = try integer(value, source, in: 1...256)
        },
        Option(name: "max-sessions", placeholder: "N", help: "Sessions held at most; more get 503 (default {default}).", default: { "\($0.maxSessions)" }) { value, source, config throws(UsageError) in
            config.maxSessions = try integer(value, source, in: 1...100_000_000)
        },
        Option(name: "max-body-bytes", placeholder: "N", help: "Largest request body; larger gets 413 (default {default}).", default: { "\($0.maxBodyBytes)" }) { value, source, config throws(UsageError) in
            config.maxBodyBytes = try integer(value, source, in: 2...(64 << 20))
        },
        Option(name: "reveal-threshold", placeholder: "PT", help: "Island shows while offset <= this (default {default}).", default: { shown($0.revealThreshold) }) { value, source, config throws(UsageError) in
            guard let number = Double(value), number.isFinite, abs(number) <= 10_000 else {
                throw UsageError(description: "\(source) must be a number from -10000 to 10000, not '\(value)'")
            }
            config.revealThreshold = number
        },
        Option(name: "session-ttl", placeholder: "S", help: "Seconds idle before a session is dropped; 0 = never (default {default}).", default: { "\($0.sessionTTL)" }) { value, source, config throws(UsageError) in
            config.sessionTTL = try integer(value, source, in: 0...(10 * 365 * 86_400))
        },
        Option(name: "shutdown-timeout", placeholder: "S", help: "Seconds a graceful stop waits for requests (default {default}).", default: { shown($0.shutdownTimeout) }) { value, source, config throws(UsageError) in
            config.shutdownTimeout = try seconds(value, source, in: 0...3600)
        },
        Option(name: "idle-timeout", placeholder: "S", help: "Seconds an idle connection stays open; 0 = forever (default {default}).", default: { "\($0.idleTimeout)" }) { value, source, config throws(UsageError) in
            config.idleTimeout = try integer(value, source, in: 0...86_400)
        },
        Option(name: "request-timeout", placeholder: "S", help: "Seconds a request's head and body may take to arrive, else 408 and the connection closes; 0 = no limit (default {default}).", default: { shown($0.requestTimeout) }) { value, source, config throws(UsageError) in
            config.requestTimeout = try seconds(value, source, in: 0...3600)
        },
        Option(name: "max-connections", placeholder: "N", help: "Open connections at most, and no more than the descriptor limit allows (default {default}).", default: { "\($0.maxConnections)" }) { value, source, config throws(UsageError) in
            config.maxConnections = try integer(value, source, in: 1...1_000_000)
        },
        Option(name: "max-connections-per-ip", placeholder: "N", help: "Connections from one client address (IPv6: its /64) at most, 0 for no limit; --trusted-proxy peers are exempt (default {default}).", default: { "\($0.maxConnectionsPerIP)" }) { value, source, config throws(UsageError) in
            config.maxConnectionsPerIP = try integer(value, source, in: 0...1_000_000)
        },
        Option(name: "connection-memory", placeholder: "B", help: "Bytes per connection for request line and headers; more gets 431 (default {default}).", default: { "\($0.connectionMemory)" }) { value, source, config throws(UsageError) in
            config.connectionMemory = try integer(value, source, in: 4096...(1 << 20))
        },
        Option(name: "heartbeat", placeholder: "S", help: "Seconds between heartbeats on event streams (default {default}).", default: { "\($0.heartbeatSeconds)" }) { value, source, config throws(UsageError) in
            config.heartbeatSeconds = try integer(value, source, in: 1...3600)
        },
        Option(name: "create-rate", placeholder: "N", help: "Sessions one client address (IPv6: its /64) may create per second; more get 429; 0 = no limit (default {default}).", default: { "\($0.createRate)" }) { value, source, config throws(UsageError) in
            config.createRate = try integer(value, source, in: 0...1_000_000)
        },
        Option(name: "create-burst", placeholder: "N", help: "Sessions one client address may create at once before --create-rate applies (default {default}).", default: { "\($0.createBurst)" }) { value, source, config throws(UsageError) in
            config.createBurst = try integer(value, source, in: 1...1_000_000)
        },
        Option(name: "max-watchers", placeholder: "N", help: "Event streams and long-polls at most, and no more than the descriptor limit allows; more get 503 (default {default}).", default: { "\($0.maxWatchers)" }) { value, source, config throws(UsageError) in
            config.maxWatchers = try integer(value, source, in: 1...1_000_000)
        },
        Option(name: "max-watchers-per-session", placeholder: "N", help: "Watchers of one session at most (default {default}).", default: { "\($0.maxWatchersPerSession)" }) { value, source, config throws(UsageError) in
            config.maxWatchersPerSession = try integer(value, source, in: 1...100_000)
        },
        Option(name: "max-wait", placeholder: "S", help: "Longest long-poll wait honoured, in seconds (default {default}).", default: { "\($0.maxWaitSeconds)" }) { value, source, config throws(UsageError) in
            config.maxWaitSeconds = try integer(value, source, in: 1...3600)
        },
        Option(name: "auth-token-file", placeholder: "PATH", help: "Require 'Authorization: Bearer <token>' on /v1, token read from PATH (again on SIGHUP).") { value, source, config throws(UsageError) in
            config.authToken = try bearerToken(inFile: value, source)
            config.authTokenFile = value
        },
        Option(name: "metrics-token-file", placeholder: "PATH", help: "Require 'Authorization: Bearer <token>' on /metrics (this token or --auth-token-file's), token read from PATH (again on SIGHUP).") { value, source, config throws(UsageError) in
            config.metricsToken = try bearerToken(inFile: value, source)
            config.metricsTokenFile = value
        },
        Option(name: "tls-cert", placeholder: "PATH", help: "Serve HTTPS with this PEM certificate (chain); read again on SIGHUP.") { value, source, config throws(UsageError) in
            config.tlsCertificatePEM = try contents(of: value, source)
            config.tlsCertificateFile = value
        },
        Option(name: "tls-key", placeholder: "PATH", help: "The PEM private key for --tls-cert; read again on SIGHUP.") { value, source, config throws(UsageError) in
            config.tlsKeyPEM = try contents(of: value, source)
            config.tlsKeyFile = value
        },
        Option(name: "tls-priorities", placeholder: "P", help: "GnuTLS priority string: the TLS versions and suites HTTPS accepts (default: TLS 1.2 and 1.3, forward-secret AEAD suites only; docs/configuration.md).") { value, source, config throws(UsageError) in
            do {
                config.tlsPriorities = try TLSPriorities(value)
            } catch {
                throw UsageError(description: "\(source) is not a priority string GnuTLS accepts (\(error))")
            }
        },
        Option(name: "log-format", placeholder: "F", help: "Log lines as 'text' or 'json' (default '{default}').", default: { $0.logFormat.rawValue }) { value, source, config throws(UsageError) in
            guard let format = LogFormat(rawValue: value) else {
                throw UsageError(description: "\(source) must be text or json, not '\(value)'")
            }
            config.logFormat = format
        },
        Option(name: "log-level", placeholder: "L", help: "debug, info (one line per request), warn or error (default {default}).", default: { $0.logLevel.name }) { value, source, config throws(UsageError) in
            guard let level = LogLevel(name: value) else {
                throw UsageError(description: "\(source) must be debug, info, warn or error, not '\(value)'")
            }
            config.logLevel = level
        },
        Option(name: "log-errors-to", placeholder: "S", help: "Where warn and error lines go: stdout (with the rest) or stderr (default {default}).", default: { $0.logErrorsToStderr ? "stderr" : "stdout" }) { value, source, config throws(UsageError) in
            guard value == "stdout" || value == "stderr" else {
                throw UsageError(description: "\(source) must be stdout or stderr, not '\(value)'")
            }
            config.logErrorsToStderr = value == "stderr"
        },
        Option(name: "trusted-proxy", placeholder: "CIDR", help: "Log the client X-Forwarded-For names when the peer is in CIDR, and exempt the peer from --max-connections-per-ip (repeatable, or comma-separated).") { value, source, config throws(UsageError) in
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
        Option(name: "store", placeholder: "S", help: "'memory', redis://HOST:PORT[,HOST:PORT...]: Redis or a Redis Cluster's seeds (rediss:// over TLS), or redis-sentinel://HOST:PORT[,HOST:PORT...]/MASTERNAME: the primary Sentinel names (rediss-sentinel:// over TLS); shared by replicas (default '{default}').", default: { $0.store.description }) { value, source, config throws(UsageError) in
            config.store = try storage(value, source)
            config.redisOverTLS = value.hasPrefix("rediss://") || value.hasPrefix("rediss-sentinel://")
        },
        Option(name: "redis-password-file", placeholder: "PATH", help: "AUTH to Redis with the password in PATH.", redisOnly: true) { value, source, config throws(UsageError) in
            config.redisPassword = try redisPassword(inFile: value, source)
        },
        Option(name: "redis-username", placeholder: "U", help: "The Redis ACL user to AUTH as (with --redis-password-file).", redisOnly: true) { value, source, config throws(UsageError) in
            guard !value.isEmpty, value.unicodeScalars.allSatisfy({ (0x21...0x7E).contains($0.value) }) else {
                throw UsageError(description: "\(source) must be a Redis user name: printable ASCII without spaces, not '\(value)'")
            }
            config.redisUsername = value
        },
        Option(name: "sentinel-password-file", placeholder: "PATH", help: "For redis-sentinel://: AUTH to the sentinels with the password in PATH (their requirepass, or --sentinel-username's).", redisOnly: true) { value, source, config throws(UsageError) in
            config.sentinelPassword = try redisPassword(inFile: value, source)
        },
        Option(name: "sentinel-username", placeholder: "U", help: "For redis-sentinel://: the sentinels' ACL user to AUTH as (with --sentinel-password-file).", redisOnly: true) { value, source, config throws(UsageError) in
            guard !value.isEmpty, value.unicodeScalars.allSatisfy({ (0x21...0x7E).contains($0.value) }) else {
                throw UsageError(description: "\(source) must be a Redis user name: printable ASCII without spaces, not '\(value)'")
            }
            config.sentinelUsername = value
        },
        Option(name: "redis-ca-file", placeholder: "PATH", help: "For rediss://: the PEM CA certificates Redis's certificate must chain to (default: the system's).", redisOnly: true) { value, _, config in
            config.redisCAFile = value
        },
        Option(name: "redis-cert", placeholder: "PATH", help: "For rediss://: a PEM client certificate (chain), for a Redis that checks clients.", redisOnly: true) { value, _, config in
            config.redisCertificateFile = value
        },
        Option(name: "redis-key", placeholder: "PATH", help: "For rediss://: the PEM private key of --redis-cert.", redisOnly: true) { value, _, config in
            config.redisKeyFile = value
        },
        Option(name: "redis-key-prefix", placeholder: "P", help: "Prefix of Redis keys and channels (default {default}).", default: { $0.redisKeyPrefix }, redisOnly: true) { value, source, config throws(UsageError) in
            guard !value.isEmpty, !value.contains("{"), !value.contains("}"), value.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
                throw UsageError(description: "\(source) must be printable ASCII without spaces or braces, not '\(value)'")
            }
            config.redisKeyPrefix = value
        },
        Option(name: "redis-timeout", placeholder: "S", help: "Seconds a request waits for Redis before 503 (default {default}).", default: { shown($0.redisTimeout) }, redisOnly: true) { value, source, config throws(UsageError) in
            config.redisTimeout = try seconds(value, source, in: 0.01...60)
        },
        Option(name: "redis-wait-replicas", placeholder: "N", help: "Redis replicas that must have each change before it is acknowledged, else 503 (default {default}).", default: { "\($0.redisWaitReplicas)" }, redisOnly: true) { value, source, config throws(UsageError) in
            config.redisWaitReplicas = try integer(value, source, in: 0...16)
        },
        Option(name: "redis-connections", placeholder: "N", help: "Connections to each Redis node, each answered on a thread of its own (default: one per two cores, up to 4; here {default}).", default: { "\($0.redisConnections)" }, redisOnly: true) { value, source, config throws(UsageError) in
            config.redisConnections = try integer(value, source, in: 1...64)
        },
        Option(name: "cors-origin", placeholder: "ORIGIN", help: "Let web pages from ORIGIN (scheme://host[:port]) call the API from a browser; repeatable (the variable: a list separated by commas or spaces).") { value, source, config throws(UsageError) in
            for origin in try crossOrigins(value, source) where !config.corsOrigins.contains(origin) {
                config.corsOrigins.append(origin)
            }
        },
        Option(name: "snapshot-interval", placeholder: "S", help: "Seconds between state-file snapshots (default {default}).", default: { "\($0.snapshotInterval)" }) { value, source, config throws(UsageError) in
            config.snapshotInterval = try integer(value, source, in: 1...86_400)
        },
        Option(name: "fsync", placeholder: "P", help: "When the state file's journal is synced to disk: everysec (a crash loses at most the last second), always (before each change is answered: nothing acknowledged is lost), no (the kernel decides) (default {default}).", default: { $0.fsync.rawValue }) { value, source, config throws(UsageError) in
            guard let policy = FsyncPolicy(rawValue: value) else {
                throw UsageError(description: "\(source) must be everysec, always or no, not '\(value)'")
            }
            config.fsync = policy
        },
    ] + tokenOptions
}
