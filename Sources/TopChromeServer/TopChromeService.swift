#if canImport(Glibc)
import Glibc
#endif
import BuildInfo
import Dispatch
import Locking
import MicroHTTPD
import SessionSnapshots
import SessionWatching
import TopChromeAPI
import TopChromeCore

/// The whole service: a session store, the API over it, and the HTTP server
/// in front, started and stopped as one.
public final class TopChromeService: Sendable {
    public static let version = SessionAPI.version

    /// What `topchrome --version` prints: the version and the commit built,
    /// e.g. `topchrome 1.0.0 (commit 4ad78a8)`, so a report names the exact build.
    public static var versionLine: String {
        "topchrome \(version) (commit \(BuildInfo.commitText))"
    }

    public let configuration: ServiceConfiguration
    /// Where the sessions live: this process or Redis.
    public let backend: StoreBackend
    /// `backend.object`, held untagged (see there).
    private let backendObject: any AnyObject & Sendable
    public let api: SessionAPI
    public let logger: Logger
    private let server: HTTPServer
    private let chores = Chores()
    private let reloads: Reloads
    /// Connections and watchers the descriptor limit allows.
    let descriptorBudget: DescriptorBudget
    private let refusalLog: RefusalLog

    public init(configuration: ServiceConfiguration) {
        self.configuration = configuration
        let rules = ChromeRules(revealThreshold: configuration.sessions.revealThreshold)
        let idleTimeout = configuration.sessions.idleTimeout
        let redisLanes: Int? = if case .memory = configuration.store { nil } else { configuration.redis.connections }
        let budget = DescriptorBudget(limit: DescriptorBudget.raiseDescriptorLimit(),
                                      reserve: DescriptorBudget.reserve(threads: configuration.http.threads,
                                                                        redisConnections: redisLanes))
        descriptorBudget = budget
        let subscriptions = SessionSubscriptions(limits: .init(total: min(configuration.limits.maxWatchers, budget.watchers),
                                                               perSession: configuration.limits.maxWatchersPerSession))
        let metrics = ServiceMetrics()
        let tlsMetrics = configuration.httpServer.tls.map(TLSMetrics.init)
        let tlsFamilies: [any MetricsFamilies] = tlsMetrics.map { [$0] } ?? []
        logger = Logger(format: configuration.logging.format, level: configuration.logging.level,
                        errors: configuration.logging.errorsToStderr ? STDERR_FILENO : STDOUT_FILENO)
        let connectionCounts = ConnectionCounts()
        let connectionMetrics = ConnectionMetrics(counts: connectionCounts, budget: budget)
        refusalLog = RefusalLog(counts: connectionCounts, logger: logger)
        backend = switch configuration.store {
        case .memory:
            .memory(MemoryBackend(configuration, rules: rules, idleTimeout: idleTimeout, subscriptions: subscriptions, logger: logger))
        case let .redis(endpoints):
            .redis(RedisBackend(endpoints, configuration, rules: rules, idleTimeout: idleTimeout,
                                subscriptions: subscriptions, logger: logger))
        }
        backendObject = backend.object
        api = SessionAPI(store: backend.sessions, maxBodyBytes: configuration.limits.maxBodyBytes,
                         authToken: configuration.auth.token, metricsToken: configuration.auth.metricsToken,
                         maxWaitSeconds: configuration.limits.maxWaitSeconds, metrics: metrics, statistics: backend.statistics,
                         moreMetrics: backend.metrics + tlsFamilies + [connectionMetrics],
                         readinessDetails: backend.readinessDetails,
                         crossOrigin: CrossOriginPolicy(origins: configuration.http.corsOrigins),
                         creationRate: configuration.limits.creationRate,
                         heartbeatSeconds: configuration.sessions.heartbeatSeconds, accessTokens: configuration.tokens.verifier,
                         tokenSigner: configuration.tokens.signer, maxTokenLifetime: configuration.tokens.maxLifetimeSeconds,
                         socketMessagesPerSecond: configuration.limits.socketMessagesPerSecond)
        var serverConfiguration = configuration.httpServer
        serverConfiguration.descriptorBudget = budget.connections
        server = HTTPServer(configuration: serverConfiguration, responder: api,
                            observer: ExchangeRecorder(metrics: metrics, logger: logger),
                            connectionCounts: connectionCounts)
        reloads = Reloads(configuration: configuration, tlsMetrics: tlsMetrics)
    }

    /// The port listened on; the real one when configured with 0.
    public var port: Int { server.port }

    /// Where clients reach the server, e.g. `http://127.0.0.1:8080`.
    public var url: String {
        let host = configuration.http.host.contains(":") ? "[\(configuration.http.host)]" : configuration.http.host
        return "\(configuration.tls.certificatePEM == nil ? "http" : "https")://\(host):\(port)"
    }

    /// Event streams and long-polls open now.
    public var watcherCount: Int { api.watcherCount }

    /// Loads the state file (if any), then starts serving.
    @discardableResult
    public func start() throws(StartupError) -> StartOutcome {
        var outcome = StartOutcome()
        switch backend {
        case let .memory(memory): outcome = try memory.start(configuration, chores: chores)
        case let .redis(redis): try redis.start(chores: chores)
        }
        do {
            try server.start()
        } catch {
            throw .server(error)
        }
        warnIfOverBudget()
        chores.every(.seconds(configuration.sessions.heartbeatSeconds)) { [api] in api.heartbeat() }
        chores.every(.seconds(1)) { [refusalLog] in refusalLog.check() }
        // Request logs are written in batches; this bounds how late a line can be.
        chores.every(.milliseconds(250)) { [logger] in logger.flush() }
        return outcome
    }

    /// One line when the descriptor limit allows fewer connections or
    /// watchers than configured: the server starts with what it allows.
    private func warnIfOverBudget() {
        var over: [String] = []
        if configuration.limits.maxConnections > descriptorBudget.connections {
            over.append("--max-connections \(configuration.limits.maxConnections) as \(descriptorBudget.connections)")
        }
        if configuration.limits.maxWatchers > descriptorBudget.watchers {
            over.append("--max-watchers \(configuration.limits.maxWatchers) as \(descriptorBudget.watchers)")
        }
        guard !over.isEmpty else { return }
        logger.log(.warn, "the descriptor limit (nofile \(descriptorBudget.limit), raised to its hard limit) allows fewer connections than configured: serving "
                   + over.joined(separator: " and "), always: true)
    }

    /// Connections open now, and those refused by reason.
    public var connections: ConnectionCounts { server.connections }

    /// What a start found.
    public struct StartOutcome: Sendable {
        /// What the state file and its journals held; nil without one.
        public var recovery: StateFileRecovery?
        /// Sessions read back from the state file; nil without one.
        public var restoredSessions: Int? { recovery?.sessions.count }
        /// Temp files of a snapshot cut short (a `kill -9` mid-write), removed.
        public var leftoversRemoved = 0
        /// Why the journals read could not be folded into a snapshot at
        /// start; they stay, and the next start reads them again.
        public var foldFailure: SnapshotFile.Failure?
    }

    /// How a stop went.
    public struct StopOutcome: Sendable {
        /// Whether in-flight requests all finished within the timeout.
        public var requestsFinished: Bool
        /// Why the last snapshot could not be written, when changes since
        /// the last good one are not in a journal either: they are lost,
        /// and the exit status must say so.
        public var lostSessions: SnapshotFile.Failure?
        /// Why the last snapshot could not be written, when the journal
        /// holds every change (the next start reads it): nothing is lost.
        public var snapshotFailure: SnapshotFile.Failure?
    }

    /// Graceful stop: `/readyz` turns 503, event streams end, WebSockets
    /// close with 1001, long-polls get 503, requests already received are answered and later ones refused
    /// with 503, then every connection closes and the state file is written.
    @discardableResult
    public func stop() -> StopOutcome {
        api.isReady = false
        chores.cancelAll()
        api.closeWatchers()
        // WebSockets answer the 1001 with their close frames; libmicrohttpd must not stop under one.
        api.stopSockets(timeout: .milliseconds(min(1000, Int(configuration.http.shutdownTimeout * 1000))))
        let finished = server.stop(timeout: .milliseconds(Int(configuration.http.shutdownTimeout * 1000)))
        var outcome = StopOutcome(requestsFinished: finished)
        switch backend {
        case let .memory(memory): (outcome.lostSessions, outcome.snapshotFailure) = memory.stop()
        case let .redis(redis): redis.stop()
        }
        logger.flush()
        return outcome
    }

    /// Reads the bearer token files and the TLS certificate and key again
    /// (SIGHUP), so secrets rotate without a restart, and logs a line saying
    /// what changed. What cannot be used (a file unreadable, empty or
    /// invalid, a key that does not match its certificate) changes nothing:
    /// the old token or certificate stays, and the line says why. Requests
    /// and streams go on throughout; connections already open keep the
    /// certificate they began with.
    public func reload() {
        let outcome = reloads.run(api: api, server: server)
        logger.log(outcome.keptSomething ? .warn : .info, "topchrome reload: " + outcome.description, always: true)
    }

    /// Writes the state file now (if there is one). A failure is reported
    /// and the service goes on: the previous snapshot stays in place, and
    /// the next try may succeed.
    public func saveSnapshot() {
        if case let .memory(memory) = backend { memory.save(isLast: false) }
    }
}

extension Duration {
    var timeInterval: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}

/// The service's periodic work (sweeping, heartbeats, snapshots, log
/// flushes), each on a Dispatch timer, all cancelled together at stop.
final class Chores: @unchecked Sendable {
    private let lock = PthreadLock()
    private var timers: [any DispatchSourceTimer] = []

    func every(_ interval: Duration, qos: DispatchQoS.QoSClass = .utility, _ work: @escaping @Sendable () -> Void) {
        let timer = DispatchSource.makeTimerSource(queue: .global(qos: qos))
        timer.schedule(deadline: .now() + interval.timeInterval, repeating: interval.timeInterval)
        timer.setEventHandler(handler: work)
        timer.resume()
        lock.withLock { timers.append(timer) }
    }

    func cancelAll() {
        let all = lock.withLock {
            defer { timers = [] }
            return timers
        }
        for timer in all { timer.cancel() }
    }
}

/// Whether a piece of work is under way, so a timer does not pile it up.
final class OneAtATime: @unchecked Sendable {
    private let lock = PthreadLock()
    private var running = false

    func begin() -> Bool {
        lock.withLock {
            defer { running = true }
            return !running
        }
    }

    func end() {
        lock.withLock { running = false }
    }
}
