import Dispatch
import Locking
import MicroHTTPD
import SessionSnapshots
import TopChromeAPI
import TopChromeCore

/// Why the service could not start, and the exit status that says so.
public enum StartupError: Error, CustomStringConvertible {
    case server(HTTPServerError)
    case stateFile(SnapshotFile.Failure)

    public var description: String {
        switch self {
        case let .server(error): error.description
        case let .stateFile(failure): failure.description
        }
    }

    /// 2 for configuration the operator must fix (like a bad flag), 1 otherwise.
    /// The server refuses to start only once its address is bound, so what
    /// it refuses then is its configuration: the TLS certificate or key.
    public var exitStatus: Int32 {
        switch self {
        case .stateFile, .server(.cannotStart): 2
        case .server: 1
        }
    }
}

/// The whole service: a session store, the API over it, and the HTTP server
/// in front, started and stopped as one.
public final class TopChromeService: Sendable {
    public static let version = SessionAPI.version

    public let configuration: ServiceConfiguration
    public let store: InMemorySessionStore
    public let api: SessionAPI
    public let logger: Logger
    private let server: HTTPServer
    private let chores = Chores()
    private let snapshots: SnapshotWriter?

    public init(configuration: ServiceConfiguration) {
        self.configuration = configuration
        let ttl = configuration.sessionTTL
        store = InMemorySessionStore(
            rules: ChromeRules(revealThreshold: configuration.revealThreshold),
            capacity: configuration.maxSessions,
            idleTimeout: ttl > 0 ? .seconds(ttl) : nil,
            subscriptions: SessionSubscriptions(limits: .init(total: configuration.maxWatchers,
                                                              perSession: configuration.maxWatchersPerSession)))
        let metrics = ServiceMetrics()
        logger = Logger(format: configuration.logFormat, level: configuration.logLevel)
        api = SessionAPI(store: store, maxBodyBytes: configuration.maxBodyBytes,
                         authToken: configuration.authToken, maxWaitSeconds: configuration.maxWaitSeconds,
                         metrics: metrics, statistics: store.statistics)
        server = HTTPServer(configuration: configuration.httpServer, responder: api,
                            observer: ExchangeRecorder(metrics: metrics, logger: logger))
        let sessions = store
        snapshots = configuration.stateFile.map { SnapshotWriter(file: SnapshotFile(path: $0), collect: sessions.snapshot) }
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
    public func start() throws(StartupError) {
        if let snapshots {
            do {
                try store.restore(try snapshots.file.read())
            } catch let failure as SnapshotFile.Failure {
                throw .stateFile(failure)
            } catch {
                throw .stateFile(.corrupt(path: snapshots.file.path, line: 0, reason: "it holds more sessions than --max-sessions"))
            }
            snapshots.file.removeLeftovers()
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
        if let ttl = store.idleTimeout {
            // Expired sessions also vanish when touched; the sweep frees the
            // ones no client will ever touch again.
            let interval = min(ttl / 4, .seconds(60))
            let store = self.store
            chores.every(interval) { store.removeExpired() }
        }
    }

    /// Graceful stop: `/readyz` turns 503, event streams end, long-polls get
    /// 503, requests already received are answered and later ones refused
    /// with 503, then every connection closes.
    /// Returns whether in-flight requests all finished within the timeout.
    @discardableResult
    public func stop() -> Bool {
        api.isReady = false
        chores.cancelAll()
        api.closeWatchers()
        let finished = server.stop(timeout: .milliseconds(Int(configuration.shutdownTimeout * 1000)))
        // After the server stopped: every change a client was told of is in
        // it. A periodic snapshot still running is waited for, and none
        // can land after this one.
        save(isLast: true)
        logger.flush()
        return finished
    }

    /// Writes the state file now. A failure is reported and the service goes
    /// on: the previous snapshot stays in place, and the next try may succeed.
    public func saveSnapshot() {
        save(isLast: false)
    }

    private func save(isLast: Bool) {
        guard let snapshots else { return }
        do {
            if isLast { try snapshots.saveLast() } else { try snapshots.save() }
        } catch {
            logger.log(.error, "snapshot failed", ["error": .string("\(error)")])
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
