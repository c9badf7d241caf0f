#if canImport(Glibc)
import Glibc
#endif
import BuildInfo
import Dispatch
import Locking
import MemorySessionStore
import MicroHTTPD
import Redis
import RedisSessionStore
import SessionSnapshots
import StoreParts
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
    /// The sessions, when they live in this process (`--store memory`).
    public let memoryStore: InMemorySessionStore?
    /// The sessions, when they live in Redis (`--store redis://…`).
    public let redisStore: RedisSessionStore?
    public let api: SessionAPI
    public let logger: Logger
    private let server: HTTPServer
    private let chores = Chores()
    private let snapshots: SnapshotWriter?
    private let reloads: Reloads

    public init(configuration: ServiceConfiguration) {
        self.configuration = configuration
        let ttl = configuration.sessionTTL
        let rules = ChromeRules(revealThreshold: configuration.revealThreshold)
        let idleTimeout: Duration? = ttl > 0 ? .seconds(ttl) : nil
        let subscriptions = SessionSubscriptions(limits: .init(total: configuration.maxWatchers,
                                                               perSession: configuration.maxWatchersPerSession))
        let metrics = ServiceMetrics()
        logger = Logger(format: configuration.logFormat, level: configuration.logLevel,
                        errors: configuration.logErrorsToStderr ? STDERR_FILENO : STDOUT_FILENO)
        switch configuration.store {
        case .memory:
            let store = InMemorySessionStore(rules: rules, capacity: configuration.maxSessions, idleTimeout: idleTimeout,
                                             subscriptions: subscriptions)
            memoryStore = store
            redisStore = nil
            let snapshots = configuration.stateFile.map { SnapshotWriter(file: SnapshotFile(path: $0), collect: store.snapshot) }
            let stateFile = snapshots.map(StateFileMetrics.init)
            api = SessionAPI(store: store, maxBodyBytes: configuration.maxBodyBytes,
                             authToken: configuration.authToken, metricsToken: configuration.metricsToken,
                             maxWaitSeconds: configuration.maxWaitSeconds,
                             metrics: metrics, statistics: store.statistics, storeMetrics: stateFile,
                             readinessDetails: stateFile.map { [$0] } ?? [],
                             crossOrigin: CrossOriginPolicy(origins: configuration.corsOrigins),
                             creationRate: configuration.creationRate)
            self.snapshots = snapshots
        case .redis, .redisSentinel:
            let redisMetrics = RedisStoreMetrics()
            let store = RedisStoreSetup(configuration: configuration, metrics: redisMetrics.hooks,
                                        connectionEvents: RedisConnectionLog.lines(to: logger))
                .store(rules: rules, idleTimeout: idleTimeout, subscriptions: subscriptions)
            redisMetrics.countChannels { store.channelsHeld }
            redisMetrics.countUnservedSlots { store.unservedSlots }
            memoryStore = nil
            redisStore = store
            api = SessionAPI(store: store, maxBodyBytes: configuration.maxBodyBytes,
                             authToken: configuration.authToken, metricsToken: configuration.metricsToken,
                             maxWaitSeconds: configuration.maxWaitSeconds,
                             metrics: metrics, statistics: store.statistics, storeMetrics: redisMetrics,
                             crossOrigin: CrossOriginPolicy(origins: configuration.corsOrigins),
                             creationRate: configuration.creationRate)
            snapshots = nil
        }
        server = HTTPServer(configuration: configuration.httpServer, responder: api,
                            observer: ExchangeRecorder(metrics: metrics, logger: logger))
        reloads = Reloads(configuration: configuration)
    }

    /// The port listened on; the real one when configured with 0.
    public var port: Int { server.port }

    /// Where clients reach the server, e.g. `http://127.0.0.1:8080`.
    public var url: String {
        let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        return "\(configuration.tlsCertificatePEM == nil ? "http" : "https")://\(host):\(port)"
    }

    /// Event streams and long-polls open now.
    public var watcherCount: Int { api.watcherCount }

    /// Loads the state file (if any), then starts serving.
    @discardableResult
    public func start() throws(StartupError) -> StartOutcome {
        var outcome = StartOutcome()
        if let snapshots, let store = memoryStore {
            let sessions = try Self.readStateFile(snapshots.file, maxSessions: configuration.maxSessions, taggedWith: store.epoch)
            do {
                try store.restore(sessions)
                outcome.restoredSessions = sessions.count
            } catch {
                throw .stateFile(Self.tooManySessions(in: snapshots.file))
            }
            snapshots.file.removeLeftovers()
            snapshots.markCurrent()
            chores.every(.seconds(configuration.snapshotInterval)) { [self] in saveSnapshot() }
        }
        do {
            try server.start()
        } catch {
            throw .server(error)
        }
        chores.every(.seconds(configuration.heartbeatSeconds)) { [api] in api.heartbeat() }
        // Request logs are written in batches; this bounds how late a line can be.
        chores.every(.milliseconds(250)) { [logger] in logger.flush() }
        if let store = memoryStore, let ttl = store.idleTimeout {
            // Expired sessions also vanish when touched; the sweep frees the
            // ones no client will ever touch again.
            let interval = min(ttl / 4, .seconds(60))
            chores.every(interval) { store.removeExpired() }
        }
        if let store = redisStore {
            // Watched sessions are kept from expiring here, four times per
            // idle timeout; watchers of sessions Redis dropped all the same
            // learn of it, and channels that came back while Redis could not
            // be read are read again.
            let interval = min(store.functions.idleTimeout.map { $0 / 4 } ?? .seconds(5), .seconds(5))
            chores.every(interval) { store.keepWatchedSessionsAlive() }
        }
        return outcome
    }

    /// What a start found.
    public struct StartOutcome: Sendable {
        /// Sessions read back from the state file; nil without one.
        public var restoredSessions: Int?
    }

    /// The state file's sessions, checked as a start needs them: readable,
    /// well formed, no more than `--max-sessions`, and in a folder that
    /// takes the snapshots (else every session would be lost at the stop).
    /// `check-config` asks the same without starting.
    static func readStateFile(_ file: SnapshotFile, maxSessions: Int,
                              taggedWith epoch: StateTag = .random()) throws(StartupError) -> [Session] {
        let sessions: [Session]
        do {
            sessions = try file.read(taggedWith: epoch)
            try file.checkWritable()
        } catch {
            throw .stateFile(error)
        }
        guard sessions.count <= maxSessions else { throw .stateFile(tooManySessions(in: file)) }
        return sessions
    }

    private static func tooManySessions(in file: SnapshotFile) -> SnapshotFile.Failure {
        .corrupt(path: file.path, line: 0, reason: "it holds more sessions than --max-sessions")
    }

    /// How a stop went.
    public struct StopOutcome: Sendable {
        /// Whether in-flight requests all finished within the timeout.
        public var requestsFinished: Bool
        /// Why the last snapshot could not be written: the sessions changed
        /// since the last good one are lost, and the exit status must say so.
        public var lostSessions: SnapshotFile.Failure?
    }

    /// Graceful stop: `/readyz` turns 503, event streams end, long-polls get
    /// 503, requests already received are answered and later ones refused
    /// with 503, then every connection closes and the state file is written.
    @discardableResult
    public func stop() -> StopOutcome {
        api.isReady = false
        chores.cancelAll()
        api.closeWatchers()
        let finished = server.stop(timeout: .milliseconds(Int(configuration.shutdownTimeout * 1000)))
        // After the server stopped: every change a client was told of is in
        // it. A periodic snapshot still running is waited for, and none
        // can land after this one.
        let failure = save(isLast: true)
        redisStore?.close()
        logger.flush()
        return StopOutcome(requestsFinished: finished, lostSessions: failure)
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

    /// Writes the state file now. A failure is reported and the service goes
    /// on: the previous snapshot stays in place, and the next try may succeed.
    public func saveSnapshot() {
        save(isLast: false)
    }

    @discardableResult
    private func save(isLast: Bool) -> SnapshotFile.Failure? {
        guard let snapshots else { return nil }
        do {
            if isLast { try snapshots.saveLast() } else { try snapshots.save() }
            return nil
        } catch {
            let message = isLast ? "last snapshot failed; sessions changed since the last good one are lost" : "snapshot failed"
            logger.log(.error, message, ["error": .string("\(error)")], always: true)
            return error
        }
    }
}

extension Duration {
    var timeInterval: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}

/// The service's periodic work (sweeping, heartbeats, snapshots, log
/// flushes), each on a Dispatch timer, all cancelled together at stop.
private final class Chores: @unchecked Sendable {
    private let lock = PthreadLock()
    private var timers: [any DispatchSourceTimer] = []

    func every(_ interval: Duration, _ work: @escaping @Sendable () -> Void) {
        let timer = DispatchSource.makeTimerSource(queue: .global(qos: .utility))
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
