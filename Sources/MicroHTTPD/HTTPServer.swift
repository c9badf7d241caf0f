import CMicroHTTPD
import Dispatch
import Locking
import Synchronization

/// An HTTP/1.1 server on libmicrohttpd: keep-alive, bodies read in full (with a
/// limit), one ``HTTPResponder`` answering every request, and a graceful stop.
public final class HTTPServer: @unchecked Sendable {
    public let configuration: HTTPServerConfiguration
    private let dispatcher: RequestDispatcher
    // Guards `daemon` and `boundPort` (changed only by start and stop).
    private let lock = PthreadLock()
    private var daemon: OpaquePointer?
    private var boundPort = 0
    private let sweep: ConnectionSweep
    /// Where libmicrohttpd's log callback reports the answers it gives itself; lives as long as the server.
    private let errorAnswers: UnsafeMutablePointer<CMHD_error_answers>

    /// - Parameter connectionCounts: where the server counts its connections
    ///   and refusals (``connections``), for a caller that needs it first.
    public init(configuration: HTTPServerConfiguration, responder: any HTTPResponder,
                observer: (any HTTPExchangeObserver)? = nil, connectionCounts: ConnectionCounts = ConnectionCounts()) {
        self.configuration = configuration
        self.dispatcher = RequestDispatcher(responder: responder, observer: observer,
                                            maxBodyBytes: configuration.maxBodyBytes,
                                            tlsIdentities: configuration.tls == nil ? nil : TLSIdentities(),
                                            trustedProxies: configuration.trustedProxies,
                                            connections: OpenConnections(limits: configuration, counts: connectionCounts))
        sweep = ConnectionSweep(connections: dispatcher.connections, suspensions: dispatcher.suspensions,
                                requestTimeout: configuration.requestTimeout)
        errorAnswers = .allocate(capacity: 1)
        errorAnswers.initialize(to: CMHD_error_answers(callback: libraryAnswered,
                                                       cls: Unmanaged.passUnretained(dispatcher).toOpaque()))
    }

    deinit {
        sweep.stop()
        if let daemon { MHD_stop_daemon(daemon) }
        errorAnswers.deallocate()
    }

    /// Connections open now, and those refused by reason.
    public var connections: ConnectionCounts {
        dispatcher.connections.counts
    }

    /// The port the server listens on (the real one when configured with 0).
    public var port: Int {
        lock.withLock { boundPort }
    }

    /// Requests received and not yet completed.
    public var requestsInFlight: Int {
        dispatcher.inFlight.load(ordering: .relaxed)
    }

    public func start() throws(HTTPServerError) {
        lock.lock()
        defer { lock.unlock() }
        guard daemon == nil else { throw .alreadyStarted }
        // Checked before the socket is taken: a certificate that cannot serve
        // is the operator's to fix, whatever the address. A restart after a
        // stop keeps the certificate the last reload gave.
        if let identities = dispatcher.tlsIdentities, identities.current == nil, let tls = configuration.tls {
            do {
                identities.add(try TLSIdentity(tls))
            } catch {
                throw .cannotStart(reason: HTTPServerError.unusableTLS(error))
            }
        }
        let socket = try ListeningSocket(
            host: configuration.host, port: configuration.port, backlog: configuration.listenBacklog)

        // Suspend/resume lets streams and long-polls wait without holding a
        // thread; upgrade hands a connection to another protocol (``UpgradeResponse``).
        var flags = MHD_USE_EPOLL_INTERNAL_THREAD.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue | MHD_ALLOW_UPGRADE.rawValue
        if socket.isIPv6 { flags |= MHD_USE_IPv6.rawValue }
        var options: [MHD_OptionItem] = [
            MHD_OptionItem(option: .LISTEN_SOCKET, value: Int(socket.descriptor), ptr_value: nil),
            MHD_OptionItem(option: .CONNECTION_TIMEOUT, value: configuration.connectionTimeoutSeconds, ptr_value: nil),
            // The caps are the accept policy's (``OpenConnections``), which
            // counts what it refuses; libmicrohttpd's own, which it splits
            // among its threads, is set out of their way.
            MHD_OptionItem(option: .CONNECTION_LIMIT, value: Self.libraryConnectionLimit(configuration), ptr_value: nil),
            MHD_OptionItem(option: .CONNECTION_MEMORY_LIMIT, value: configuration.connectionMemoryBytes, ptr_value: nil),
        ]
        if configuration.threads > 1 {
            options.append(MHD_OptionItem(option: .THREAD_POOL_SIZE, value: configuration.threads, ptr_value: nil))
        }
        if dispatcher.tlsIdentities != nil {
            // Not MHD_OPTION_HTTPS_MEM_CERT/KEY, which libmicrohttpd reads
            // once at start: each handshake asks for the current certificate,
            // so ``replaceTLSCredentials(_:)`` works on a running server.
            flags |= MHD_USE_TLS.rawValue
            options.append(CMHD_certificate_callback_option(certificateForHandshake))
        }

        let context = Unmanaged.passUnretained(dispatcher).toOpaque()
        // libmicrohttpd reads the priority string while it starts, not after.
        let started = configuration.tlsPriorities.description.withCString { priorities in
            if dispatcher.tlsIdentities != nil {
                options.append(MHD_OptionItem(option: .HTTPS_PRIORITIES, value: 0,
                                              ptr_value: UnsafeMutableRawPointer(mutating: priorities)))
            }
            options.append(MHD_OptionItem(option: .END, value: 0, ptr_value: nil))
            return options.withUnsafeMutableBufferPointer { items in
                CMHD_start_daemon(UInt32(flags), admitConnection, context, accessHandler, context, requestCompleted,
                                  context, connectionNotified, context, requestLineArrived, context, errorAnswers,
                                  items.baseAddress)
            }
        }
        guard let started else {
            socket.closeUnlessClosed()
            throw .cannotStart(reason: "libmicrohttpd refused the configuration")
        }
        daemon = started
        boundPort = socket.port
        sweep.start()
    }

    private static func libraryConnectionLimit(_ configuration: HTTPServerConfiguration) -> Int {
        let cap = min(configuration.maxConnections, configuration.descriptorBudget ?? .max)
        return cap * max(1, configuration.threads) + 64
    }

    /// Stops gracefully: requests already received are answered (with
    /// `Connection: close`), requests that arrive from now on are refused
    /// with ``HTTPResponder/refusalWhileStopping()``, then every connection is
    /// closed. Waits at most `timeout` for in-flight requests; returns whether
    /// they all finished in time.
    @discardableResult
    public func stop(timeout: Duration) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard let daemon else { return true }
        dispatcher.isDraining.store(true, ordering: .sequentiallyConsistent)
        // No sweep from now on: it would resume what the stop resumes.
        sweep.stop()
        // Streams end and waiting requests get 503: every suspended connection
        // must be resumed before libmicrohttpd stops.
        dispatcher.suspensions.terminateAll(fallback: dispatcher.responder.refusalWhileStopping())

        // The listening socket stays open until libmicrohttpd stops: requests
        // that arrive meanwhile, on new connections too, are refused whole
        // (503, Retry-After, Connection: close). Not MHD_quiesce_daemon: with
        // epoll worker threads it races them to take the socket out of their
        // epoll sets, and the loser aborts the process (libmicrohttpd 0.9.75).
        let deadline = DispatchTime.after(timeout)
        while dispatcher.inFlight.load(ordering: .sequentiallyConsistent) > 0 {
            if dispatcher.lastRequestEnded.wait(timeout: deadline) == .timedOut { break }
        }
        let finished = dispatcher.inFlight.load(ordering: .acquiring) == 0

        MHD_stop_daemon(daemon)  // closes the listening socket too
        self.daemon = nil
        dispatcher.tlsIdentities?.dropAllButCurrent()
        return finished
    }

    /// Serves new TLS connections with this certificate and key from now on
    /// (a rotation without a restart); connections already open keep the
    /// one they began with. Credentials that cannot serve (PEM that does not
    /// parse, a key that does not match) change nothing, and the error says why.
    public func replaceTLSCredentials(_ credentials: TLSCredentials) throws(TLSCredentialsError) {
        guard let identities = dispatcher.tlsIdentities else {
            throw TLSCredentialsError(description: "the server does not serve HTTPS")
        }
        identities.add(try TLSIdentity(credentials))
    }
}

extension HTTPServerError {
    /// Why a start refuses a certificate and key, also as `check-config` says it.
    public static func unusableTLS(_ error: TLSCredentialsError) -> String {
        "the TLS certificate and key cannot serve HTTPS: \(error)"
    }
}

/// What libmicrohttpd's C callbacks reach through their `cls` pointer.
final class RequestDispatcher: Sendable {
    let responder: any HTTPResponder
    let observer: (any HTTPExchangeObserver)?
    let maxBodyBytes: Int
    let inFlight = Atomic<Int>(0)
    let suspensions = SuspensionRegistry()
    /// Set when stopping: responses then ask clients to close the connection.
    let isDraining = Atomic<Bool>(false)
    /// Signalled, while stopping, by the request that leaves none in flight:
    /// the stop waits on it rather than polling the count.
    let lastRequestEnded = DispatchSemaphore(value: 0)
    /// The certificates TLS handshakes present; nil when serving plain HTTP.
    let tlsIdentities: TLSIdentities?

    let trustedProxies: TrustedProxies
    let connections: OpenConnections

    init(responder: any HTTPResponder, observer: (any HTTPExchangeObserver)?, maxBodyBytes: Int,
         tlsIdentities: TLSIdentities?, trustedProxies: TrustedProxies = TrustedProxies(),
         connections: OpenConnections = OpenConnections(limits: HTTPServerConfiguration())) {
        self.trustedProxies = trustedProxies
        self.connections = connections
        self.responder = responder
        self.observer = observer
        self.maxBodyBytes = maxBodyBytes
        self.tlsIdentities = tlsIdentities
    }

    /// A request counted in `inFlight` is over. Sequentially consistent with
    /// the stop's flag: either the stop sees the count fall, or this sees the flag.
    func requestEnded() {
        if inFlight.subtract(1, ordering: .sequentiallyConsistent).newValue == 0,
           isDraining.load(ordering: .sequentiallyConsistent) {
            lastRequestEnded.signal()
        }
    }

    /// Who asked (see ``HTTPExchange/client``). Without trusted proxies,
    /// the usual case, the peer, found without copying the proxies or the
    /// request's fields (each a retain and a release).
    @inline(__always)
    func client(of peer: String?, forwardedFor headers: borrowing HTTPHeaders) -> String? {
        trustedProxies.ranges.isEmpty ? peer : trustedProxies.client(of: peer, forwardedFor: headers)
    }
}
