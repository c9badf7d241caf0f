import Dispatch
import Locking
import MicroHTTPD
import Redis
import SessionSnapshots

/// `topchrome check-config`: what a start would refuse, found without
/// serving, as `nginx -t` and `caddy validate` do, so a deploy can stop
/// before it replaces a running server. Flags, environment, the token file
/// and the TLS files are read by parsing; this checks the rest with the
/// start's own checks: TLS material that can serve, the state file, and
/// whether a Redis store answers.
public struct ConfigurationCheck: Sendable {
    /// What was found, for one line each.
    public var checked: [String] = []
    /// Configuration the operator must fix: a start would refuse it.
    public var problems: [String] = []
    /// A Redis the configuration names that did not answer. A server starts
    /// without it (requests get 503 until it answers), and it may be a
    /// passing outage rather than a wrong address: a code of its own, so
    /// a deploy can tell "fix the configuration" from "Redis is away".
    public var unreachable: [String] = []
    /// Worth knowing, but no reason to stop a deploy: a seed of several
    /// that did not answer while another did (the client finds the nodes
    /// from any one of them).
    public var warnings: [String] = []

    /// 0 when everything holds; 2 for a problem (as for a bad flag); 3 when
    /// only the store could not be reached.
    public var exitStatus: Int32 {
        !problems.isEmpty ? 2 : !unreachable.isEmpty ? 3 : 0
    }

    public init(_ configuration: ServiceConfiguration) {
        checked.append("flags and environment: read")
        if let tls = configuration.httpServer.tls {
            do {
                try tls.validate()
                checked.append("TLS: the certificate and key can serve HTTPS")
            } catch {
                problems.append(HTTPServerError.unusableTLS(error))
            }
        }
        if configuration.auth.token != nil { checked.append("bearer token: read") }
        if configuration.auth.metricsToken != nil { checked.append("metrics token: read") }
        if let verifier = configuration.tokens.verifier {
            let count = verifier.keys.keys.count
            checked.append("access token keys: \(count) key\(count == 1 ? "" : "s") (\(verifier.keys.keys.map(\.algorithm.rawValue).joined(separator: ", ")))")
        }
        if let signer = configuration.tokens.signer {
            checked.append("token signing key: Ed25519, kid \(signer.keyID); minted tokens live at most \(configuration.tokens.maxLifetimeSeconds) s")
        }
        switch configuration.store {
        case .memory:
            if let path = configuration.stateFile.path {
                do {
                    let recovery = try MemoryBackend.readStateFile(SnapshotFile(path: path),
                                                                   maxSessions: configuration.limits.maxSessions)
                    let count = recovery.sessions.count
                    let journals = recovery.journals.isEmpty ? "" : " (\(recovery.fromJournal) from its journals)"
                    checked.append("state file '\(path)': \(count) session\(count == 1 ? "" : "s")\(journals), and its folder has room for snapshots")
                    for torn in recovery.dropped { checked.append("state file journal \(torn)") }
                } catch {
                    problems.append(error.description)
                }
            }
        case let .redis(endpoints):
            check(endpoints, configuration)
        }
    }

    private mutating func check(_ endpoints: RedisEndpoints, _ configuration: ServiceConfiguration) {
        switch endpoints.nodes {
        case let .seeds(seeds):
            let before = unreachable.count
            for node in seeds { check(node, configuration) }
            let away = unreachable.count - before
            if seeds.count > 1, away > 0, away < seeds.count {
                warnings += unreachable[before...].map { $0 + " (another seed answered)" }
                unreachable.removeSubrange(before...)
            }
        case let .sentinels(sentinels, masterName):
            // The primary as the service would find it, then that primary.
            let answer = RedisPrimaries.primary(named: masterName, sentinels: sentinels, for: configuration.redis.client)
            if let primary = answer.primary {
                checked.append("Sentinel: the primary of \(masterName) is \(primary)")
                check(primary, configuration)
            } else if answer.unknownName {
                problems.append("no sentinel knows a master named \(masterName): " + answer.failures.joined(separator: "; "))
            } else if !answer.failures.isEmpty, answer.failures.allSatisfy({ $0.contains("setup command refused") }) {
                // A sentinel that wants another password (or none) refuses every time.
                problems.append("the sentinels refused the connection (check --sentinel-password-file and --sentinel-username): "
                    + answer.failures.joined(separator: "; "))
            } else {
                unreachable.append("no sentinel named the primary of \(masterName) (" + answer.failures.joined(separator: "; ")
                    + "); a server would start, answering 503 until one does")
            }
        }
    }

    private mutating func check(_ node: RedisNode, _ configuration: ServiceConfiguration) {
        switch Self.probe(node, configuration.redis.client) {
        case nil:
            let how = (configuration.redis.tls == nil ? "" : " over TLS")
                + (configuration.redis.password == nil ? "" : " after AUTH")
                + (configuration.redis.username.map { " as \($0)" } ?? "")
            checked.append("Redis \(node): answered PING" + how)
            switch RedisPermissionCheck.check(node, configuration) {
            case .allowed:
                checked.append("Redis \(node): the user may run every command the store sends (ACL DRYRUN)")
            case let .missing(grants):
                problems.append(RedisPermissionCheck.lacking(grants, user: configuration.redis.username, node: node))
            case let .unknown(reason):
                checked.append("Redis \(node): the user's permissions could not be checked (\(reason))")
            }
        case let .refused(reason)?:
            // Redis's own words (WRONGPASS, NOAUTH), or OpenSSL's, say what it wants.
            let said = reason.trimmingPrefix("setup command refused: ")
            problems.append("Redis \(node) refused the connection: \(said) (check \(RedisRefusalAdvice.check(String(said))))")
        case let .unreachable(reason)?:
            unreachable.append("Redis \(node) could not be reached (\(reason)); a server would start, answering 503 until it can")
        }
    }

    /// Why a Redis node would not serve.
    enum ProbeFailure: Equatable {
        /// It answered but refused `AUTH` (or wants one), or its TLS certificate
        /// was refused: a wrong password or CA is configuration.
        case refused(String)
        /// No answer: not listening, no route, a name that does not resolve, too slow.
        case unreachable(String)
    }

    /// Connects to `node` as the store would (its user, password and TLS)
    /// and sends PING, all within the command timeout; nil if it answered.
    static func probe(_ node: RedisNode, _ redis: RedisConfiguration) -> ProbeFailure? {
        let verdict = ConnectionVerdict()
        var configuration = redis
        configuration.connectionEvents = { verdict.set($0.change) }
        let connection = RedisConnection(to: node, configuration: configuration)
        defer { connection.close() }
        let answered = DispatchSemaphore(value: 0)
        let result = Refusal(), unanswered = Refusal()
        connection.send(["PING"], deadline: .now + configuration.commandTimeout) { reply in
            switch reply {
            case .success(.simple), .success(.bulk): break
            case let .success(.error(message)): result.set(message)
            case let .success(other): result.set("it answered PING with \(other)")
            case let .failure(error):
                result.set("\(error)")
                unanswered.set("\(error)")
            }
            answered.signal()
        }
        answered.wait()
        guard let failure = result.value else { return nil }
        // PING's deadline can pass while a slow TLS handshake is still
        // under way (it was set before connecting began): what the
        // connection then found, refused or not, decides. Its setup has a
        // deadline of its own, so that verdict comes.
        if unanswered.value != nil { verdict.wait(upTo: configuration.commandTimeout) }
        if let reason = verdict.refusal { return .refused(reason) }
        return .unreachable(connection.lastFailureReason ?? failure)
    }

    /// Whether a connection has reported how its first attempt went
    /// (connected, refused, unreachable), and the refusal if one came; set
    /// on its I/O thread and awaited by the probe.
    private final class ConnectionVerdict: @unchecked Sendable {
        private let lock = PthreadLock()
        private let reported = DispatchSemaphore(value: 0)
        private var heard = false
        private var refused: String?

        func set(_ change: RedisConnectionEvent.Change) {
            let isFirst = lock.withLock {
                if case let .refused(reason) = change, refused == nil { refused = reason }
                defer { heard = true }
                return !heard
            }
            if isFirst { reported.signal() }
        }

        var refusal: String? { lock.withLock { refused } }

        func wait(upTo timeout: Duration) {
            if reported.wait(timeout: .now() + timeout.timeInterval) == .success { reported.signal() }
        }
    }

    /// A reason set from a connection's I/O thread and read after it.
    private final class Refusal: @unchecked Sendable {
        private let lock = PthreadLock()
        private var reason: String?
        func set(_ text: String) { lock.withLock { if reason == nil { reason = text } } }
        var value: String? { lock.withLock { reason } }
    }
}
