import Dispatch
import MicroHTTPD
import TopChromeCore

/// The whole service: a session store, the API over it, and the HTTP server
/// in front, started and stopped as one.
public final class TopChromeService: Sendable {
    public static let version = "1.0.0"

    public let configuration: ServiceConfiguration
    public let store: InMemorySessionStore
    public let api: SessionAPI
    private let watchers: WatcherHub
    private let server: HTTPServer
    // Dispatch sources are thread-safe; the type just is not marked Sendable.
    nonisolated(unsafe) private let sweeper: any DispatchSourceTimer
    nonisolated(unsafe) private let heartbeat: any DispatchSourceTimer

    public init(configuration: ServiceConfiguration) {
        self.configuration = configuration
        let ttl = configuration.sessionTTL
        let watchers = WatcherHub(limits: .init(total: configuration.maxWatchers,
                                                perSession: configuration.maxWatchersPerSession))
        self.watchers = watchers
        store = InMemorySessionStore(
            rules: ChromeRules(revealThreshold: configuration.revealThreshold),
            capacity: configuration.maxSessions,
            idleTimeout: ttl > 0 ? .seconds(ttl) : nil,
            observer: watchers.publish)
        api = SessionAPI(store: store, watchers: watchers, maxBodyBytes: configuration.maxBodyBytes,
                         authToken: configuration.authToken)
        server = HTTPServer(configuration: configuration.httpServer, responder: api)
        sweeper = DispatchSource.makeTimerSource(queue: .global(qos: .utility))
        heartbeat = DispatchSource.makeTimerSource(queue: .global(qos: .utility))
    }

    /// The port listened on; the real one when configured with 0.
    public var port: Int { server.port }

    /// Where clients reach the server, e.g. `http://127.0.0.1:8080`.
    public var url: String {
        let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        return "\(configuration.tlsCertificatePEM == nil ? "http" : "https")://\(host):\(port)"
    }

    /// Event streams and long-polls open now.
    public var watcherCount: Int { watchers.count }

    public func start() throws(HTTPServerError) {
        try server.start()
        let interval = Double(configuration.heartbeatSeconds)
        heartbeat.schedule(deadline: .now() + interval, repeating: interval)
        heartbeat.setEventHandler { [watchers] in watchers.heartbeat() }
        heartbeat.resume()
        if let ttl = store.idleTimeout {
            // Expired sessions also vanish when touched; the sweep frees the
            // ones no client will ever touch again.
            let interval = min(ttl / 4, .seconds(60))
            let store = self.store
            sweeper.schedule(deadline: .now() + interval.timeInterval, repeating: interval.timeInterval)
            sweeper.setEventHandler { @Sendable in store.removeExpired() }
            sweeper.resume()
        }
    }

    /// Graceful stop: `/readyz` turns 503, event streams end, long-polls get
    /// 503, no new connections are taken, requests already received are
    /// answered, then every connection closes.
    /// Returns whether in-flight requests all finished within the timeout.
    @discardableResult
    public func stop() -> Bool {
        api.isReady = false
        sweeper.cancel()
        heartbeat.cancel()
        watchers.closeAll()
        return server.stop(timeout: .milliseconds(Int(configuration.shutdownTimeout * 1000)))
    }
}

extension Duration {
    var timeInterval: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
