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
    private let earlySnapshot = OneAtATime()
    private let snapshots: SnapshotWriter?
    private let reloads: Reloads
    /// Redis's error replies by code, whose episodes a chore ends.
    private let redisErrorReplies: RedisErrorReplies?
    /// Connections and watchers the descriptor limit allows.
    let descriptorBudget: DescriptorBudget
    private let refusalLog: RefusalLog

    public init(configuration: ServiceConfiguration) {
        self.configuration = configuration
        let ttl = configuration.sessionTTL
        let rules = ChromeRules(revealThreshold: configuration.revealThreshold)
        let idleTimeout: Duration? = ttl > 0 ? .seconds(ttl) : nil
        let redisLanes: Int? = if case .memory = configuration.store { nil } else { configuration.redisConnections }
        let budget = DescriptorBudget(limit: DescriptorBudget.raiseDescriptorLimit(),
                                      reserve: DescriptorBudget.reserve(threads: configuration.threads,
                                                                        redisConnections: redisLanes))
        descriptorBudget = budget
        let subscriptions = SessionSubscriptions(limits: .init(total: min(configuration.maxWatchers, budget.watchers),
                                                               perSession: configuration.maxWatchersPerSession))
        let metrics = ServiceMetrics()
        let tlsMetrics = configuration.httpServer.tls.map(TLSMetrics.init)
        let tlsFamilies: [any MetricsFamilies] = tlsMetrics.map { [$0] } ?? []
        logger = Logger(format: configuration.logFormat, level: configuration.logLevel,
                        errors: configuration.logErrorsToStderr ? STDERR_FILENO : STDOUT_FILENO)
        let connectionCounts = ConnectionCounts()
        let connectionMetrics = ConnectionMetrics(counts: connectionCounts, budget: budget)
        refusalLog = RefusalLog(counts: connectionCounts, logger: logger)
        switch configuration.store {
        case .memory:
            let barrier = configuration.stateFile != nil && configuration.fsync == .always ? ChangeBarrier() : nil
            let store = InMemorySessionStore(rules: rules, capacity: configuration.maxSessions, idleTimeout: idleTimeout,
                                             subscriptions: subscriptions, journaled: configuration.stateFile != nil,
                                             barrier: barrier)
            memoryStore = store
            redisStore = nil
            redisErrorReplies = nil
            let snapshots = configuration.stateFile.map { path in
                let file = SnapshotFile(path: path)
                let journal = JournalWriter(files: JournalFiles(snapshot: file), policy: configuration.fsync,
                                            take: store.takeChanges(into:))
                barrier?.set { journal.flush() }
                return SnapshotWriter(file: file, journal: journal, collect: store.snapshot)
            }
            let stateFile = snapshots.map { StateFileMetrics(writer: $0, changesNotTaken: { store.changesNotTaken }) }
            api = SessionAPI(store: store, maxBodyBytes: configuration.maxBodyBytes,
                             authToken: configuration.authToken, metricsToken: configuration.metricsToken,
                             maxWaitSeconds: configuration.maxWaitSeconds, metrics: metrics, statistics: store.statistics,
                             moreMetrics: (stateFile.map { [$0] } ?? []) + tlsFamilies + [connectionMetrics],
                             readinessDetails: stateFile.map { [$0] } ?? [],
                             crossOrigin: CrossOriginPolicy(origins: configuration.corsOrigins),
                             creationRate: configuration.creationRate, accessTokens: configuration.tokenVerifier)
            self.snapshots = snapshots
        case .redis, .redisSentinel:
            let errorReplies = RedisErrorReplies(logger: logger)
            redisErrorReplies = errorReplies
            let topology = RedisTopologyLog(logger: logger)
            let redisMetrics = RedisStoreMetrics(errorReplies: errorReplies, topology: topology)
            let store = RedisStoreSetup(configuration: configuration, metrics: redisMetrics.hooks,
                                        connectionEvents: RedisConnectionLog.lines(to: logger),
                                        topologyChanged: { topology.record($0) })
                .store(rules: rules, idleTimeout: idleTimeout, subscriptions: subscriptions)
            redisMetrics.countChannels { store.channelsHeld }
            redisMetrics.countUnservedSlots { store.unservedSlots }
            redisMetrics.takeCensus { store.census }
            memoryStore = nil
            redisStore = store
            api = SessionAPI(store: store, maxBodyBytes: configuration.maxBodyBytes,
                             authToken: configuration.authToken, metricsToken: configuration.metricsToken,
                             maxWaitSeconds: configuration.maxWaitSeconds, metrics: metrics, statistics: store.statistics,
                             moreMetrics: [redisMetrics] + tlsFamilies + [connectionMetrics],
                             crossOrigin: CrossOriginPolicy(origins: configuration.corsOrigins),
                             creationRate: configuration.creationRate, accessTokens: configuration.tokenVerifier)
            snapshots = nil
        }
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
        let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        return "\(configuration.tlsCertificatePEM == nil ? "http" : "https")://\(host):\(port)"
    }

    /// Event streams and long-polls open now.
    public var watcherCount: Int { api.watcherCount }

    /// Loads the state file (if any), then starts serving.
    @discardableResult
    public func start() throws(StartupError) -> StartOutcome {
        var outcome = StartOutcome()
        if let snapshots, let store = memoryStore, let journal = snapshots.journal {
            let recovery = try Self.readStateFile(snapshots.file, maxSessions: configuration.maxSessions, taggedWith: store.epoch)
            do {
                try store.restore(recovery.sessions)
            } catch {
                throw .stateFile(.tooManySessions(path: snapshots.file.path, count: recovery.sessions.count, limit: store.capacity))
            }
            outcome.recovery = recovery
            outcome.leftoversRemoved = snapshots.file.removeLeftovers()
            do {
                try journal.open(number: recovery.nextJournal)
            } catch {
                throw .stateFile(error)
            }
            if recovery.journals.isEmpty && recovery.staleJournals.isEmpty {
                snapshots.markCurrent()
            } else {
                // The journals read go into a snapshot now, so none is read twice.
                outcome.foldFailure = save(isLast: false)
            }
            chores.every(.seconds(configuration.snapshotInterval)) { [self] in saveSnapshot() }
            // Also under `always`: removals found by expiry are journalled here.
            chores.every(.seconds(1), qos: .userInitiated) { [self] in
                journal.flush()
                let limit = Self.journalLimit(snapshot: snapshots.file, minimum: configuration.journalSnapshotBytes)
                if journal.health.bytes > limit { snapshotSoon() }
            }
        }
        if redisStore != nil {
            try checkRedisPermissions()
            checkReplicaRequirement()
        }
        do {
            try server.start()
        } catch {
            throw .server(error)
        }
        warnIfOverBudget()
        chores.every(.seconds(configuration.heartbeatSeconds)) { [api] in api.heartbeat() }
        chores.every(.seconds(1)) { [refusalLog] in refusalLog.check() }
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
        if let errorReplies = redisErrorReplies, let store = redisStore {
            // A kind of error reply that stopped is told within seconds;
            // refusals that fail every change make the store not ready
            // until a check finds changes can succeed again.
            chores.every(.seconds(2)) {
                errorReplies.sweep()
                if errorReplies.takeRefusalSeen() || store.writesRefused != nil { store.checkWrites() }
            }
        }
        return outcome
    }

    /// One line when the descriptor limit allows fewer connections or
    /// watchers than configured: the server starts with what it allows.
    private func warnIfOverBudget() {
        var over: [String] = []
        if configuration.maxConnections > descriptorBudget.connections {
            over.append("--max-connections \(configuration.maxConnections) as \(descriptorBudget.connections)")
        }
        if configuration.maxWatchers > descriptorBudget.watchers {
            over.append("--max-watchers \(configuration.maxWatchers) as \(descriptorBudget.watchers)")
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

    /// The state file's sessions, checked as a start needs them: readable,
    /// well formed (journals too, bar a torn last record), no more than
    /// `--max-sessions`, and in a folder that takes the snapshots (else
    /// every session would be lost at the stop). `check-config` asks the
    /// same without starting.
    static func readStateFile(_ file: SnapshotFile, maxSessions: Int,
                              taggedWith epoch: StateTag = .random()) throws(StartupError) -> StateFileRecovery {
        let recovery: StateFileRecovery
        do {
            recovery = try StateFileRecovery.read(file, taggedWith: epoch)
            try file.checkWritable()
        } catch {
            throw .stateFile(error)
        }
        guard recovery.sessions.count <= maxSessions else {
            throw .stateFile(.tooManySessions(path: file.path, count: recovery.sessions.count, limit: maxSessions))
        }
        return recovery
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
        snapshots?.journal?.flush()
        let failure = save(isLast: true)
        if failure == nil { snapshots?.journal?.closeCleanly() }
        redisStore?.close()
        logger.flush()
        let lost = failure != nil && snapshots?.journal?.holdsEveryChange != true
        return StopOutcome(requestsFinished: finished, lostSessions: lost ? failure : nil, snapshotFailure: lost ? nil : failure)
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

    /// A journal past this starts a snapshot before its interval, as Redis
    /// rewrites an AOF that doubled: twice the snapshot, and at least `minimum`.
    /// A long journal costs disk and start time, not requests.
    static func journalLimit(snapshot file: SnapshotFile, minimum: Int) -> Int {
        var status = stat()
        let size = stat(file.path, &status) == 0 ? Int(status.st_size) : 0
        return max(minimum, 2 * size)
    }

    /// A snapshot on a queue of its own, unless one started so is still running.
    private func snapshotSoon() {
        guard earlySnapshot.begin() else { return }
        DispatchQueue.global(qos: .utility).async { [self] in
            saveSnapshot()
            earlySnapshot.end()
        }
    }

    /// Writes the state file now. A failure is reported and the service goes
    /// on: the previous snapshot stays in place, and the next try may succeed.
    public func saveSnapshot() {
        save(isLast: false)
    }

    @discardableResult
    private func save(isLast: Bool) -> SnapshotFile.Failure? {
        guard let snapshots else { return nil }
        let failedBefore = snapshots.health.failuresInARow
        do {
            let saved = isLast ? try snapshots.saveLast() : try snapshots.save()
            if saved, failedBefore > 0 {
                logger.log(.info, "snapshot saved again", ["failed_in_a_row": .int(failedBefore)], always: true)
            }
            return nil
        } catch {
            // At the stop, whether anything is lost is the caller's to say:
            // the journal may hold every change.
            logger.log(isLast ? .warn : .error, isLast ? "last snapshot failed" : "snapshot failed",
                       ["error": .string("\(error)")], always: true)
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
private final class OneAtATime: @unchecked Sendable {
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
