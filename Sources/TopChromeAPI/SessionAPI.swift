import AccessTokens
#if canImport(Glibc)
import Glibc
#endif
import MicroHTTPD
import RuleStatistics
import StrictJSON
import Synchronization
import TopChromeCore
import WebSocketFrames

/// The v1 HTTP API over a ``SessionStore``: routing, JSON in and out, and
/// problem details for everything that goes wrong. Holds no socket, so it
/// answers requests in tests as it does in the server.
public final class SessionAPI: HTTPResponder {
    /// The build, as `--version` and `/metrics` name it.
    public static let version = "1.0.0"

    /// Seconds a client is told to wait when the store is full: sessions
    /// leave by deletion or idle expiry, so room comes back over time.
    static let retryAfterWhenFull = 30

    /// Longest `Prefer: wait=N` honoured, in seconds; longer asks wait this long.
    let maxWaitSeconds: Int
    /// Seconds a client is told to wait when there are too many watchers.
    static let retryAfterWhenWatched = 5

    /// Where sessions live, and their changes: in this process, answering
    /// at once, or in another (Redis), answering later while the request waits.
    let store: any SessionStore & SessionChangeFeed
    let watchers: WatcherHub
    /// Families of `/metrics` that the wiring adds (e.g. Redis round trips, the TLS certificate).
    private let moreMetrics: [any MetricsFamilies]
    private let readiness: Readiness
    let maxBodyBytes: Int
    /// Nil when no token is configured: then requests never read it.
    private let authToken: CurrentBearerToken?
    /// Access tokens (JWTs) for one session each; nil: none is taken.
    let accessGate: AccessGate?
    /// The key tokens are minted with; nil: none are.
    private let minting: TokenMinting?
    /// A scraper's token for `/metrics`; nil leaves `/metrics` open.
    private let metricsToken: CurrentBearerToken?
    private let metrics: ServiceMetrics
    private let statistics: ChromeStatistics
    private let ready = Atomic<Bool>(true)
    /// Session creations per client address; nil: no limit.
    private let creationLimit: CreationRateLimit?
    /// Web pages on other origins allowed to call; nil (the default) costs one check per request.
    let crossOrigin: CrossOriginPolicy?
    /// An event stream's head, which names the heartbeat's interval
    /// (`TopChrome-Heartbeat`): a client takes a stream silent for longer
    /// than that for dead, and only the server knows its `--heartbeat`.
    let eventStreamHeaders: HTTPHeaders
    let heartbeatSeconds: Int
    /// The WebSocket channel's sockets, read by one thread of their own.
    let sockets: WebSocketLoop

    public init(store: any SessionStore & SessionChangeFeed, maxBodyBytes: Int, authToken: String? = nil,
                metricsToken: String? = nil, maxWaitSeconds: Int = 60, metrics: ServiceMetrics = ServiceMetrics(),
                statistics: ChromeStatistics = ChromeStatistics(), moreMetrics: [any MetricsFamilies] = [],
                readinessDetails: [any ReadinessDetail] = [], crossOrigin: CrossOriginPolicy? = nil,
                creationRate: CreationRatePolicy? = nil, heartbeatSeconds: Int = 15, accessTokens: TokenVerifier? = nil,
                tokenSigner: TokenSigner? = nil, maxTokenLifetime: Int = 3600,
                socketMessagesPerSecond: Int = 200) {
        self.maxWaitSeconds = maxWaitSeconds
        self.heartbeatSeconds = heartbeatSeconds
        // A client that does not read holds its answers (small) and the newest state: a few bodies' worth.
        sockets = WebSocketLoop(limits: WebSocketLimits(maxMessageBytes: maxBodyBytes, messagesPerSecond: socketMessagesPerSecond,
                                                        maxBufferedBytes: max(4 * maxBodyBytes, 65_536)))
        eventStreamHeaders = Self.eventStreamHeaders(heartbeatSeconds: heartbeatSeconds)
        self.store = store
        watchers = WatcherHub(feed: store)
        self.moreMetrics = moreMetrics
        self.maxBodyBytes = maxBodyBytes
        let token = authToken.map { CurrentBearerToken(BearerToken($0)) }
        self.authToken = token
        self.metricsToken = metricsToken.map { CurrentBearerToken(BearerToken($0)) }
        accessGate = accessTokens.map(AccessGate.init)
        minting = tokenSigner.map { TokenMinting(signer: $0, maxLifetime: maxTokenLifetime) }
        readiness = Readiness(store: { store.readiness }, details: readinessDetails, authToken: token)
        self.metrics = metrics
        self.statistics = statistics
        self.crossOrigin = crossOrigin
        creationLimit = creationRate.map(CreationRateLimit.init)
    }

    /// Ready until shutdown begins: then `/readyz` answers 503 so load
    /// balancers stop sending new clients while in-flight requests finish.
    public var isReady: Bool {
        get { ready.load(ordering: .relaxed) }
        set { ready.store(newValue, ordering: .relaxed) }
    }

    /// Event streams and long-polls open now.
    public var watcherCount: Int { watchers.count }

    /// Requests from now on need this token (a rotation without a restart).
    /// Only an API made with a token has one to replace: one made without
    /// stays open, and this returns false.
    @discardableResult
    public func replaceAuthToken(_ token: String) -> Bool {
        guard let authToken else { return false }
        authToken.replace(with: BearerToken(token))
        return true
    }

    /// Access tokens are verified with these keys and this policy from now
    /// on (a rotated JWKS, a new cut-off); false for an API made without.
    @discardableResult
    public func replaceTokenVerifier(_ verifier: TokenVerifier) -> Bool {
        guard let accessGate else { return false }
        take(verifier, accessGate)
        return true
    }

    /// Tokens are minted with this key, and verified with these keys (the
    /// signer's among them), from now on; false for an API made without a key.
    @discardableResult
    public func replaceTokenSigner(_ signer: TokenSigner, verifier: TokenVerifier) -> Bool {
        guard let minting, let accessGate else { return false }
        take(verifier, accessGate)
        minting.replace(with: signer)
        return true
    }

    /// Tokens a moved cut-off refuses lose their watches too, not only their next request.
    private func take(_ verifier: TokenVerifier, _ accessGate: AccessGate) {
        accessGate.replace(with: verifier)
        watchers.endWatches(revokedBy: verifier.policy)
    }

    /// `/metrics` needs this token from now on; false (and nothing changes)
    /// for an API made without one, whose `/metrics` stays open.
    @discardableResult
    public func replaceMetricsToken(_ token: String) -> Bool {
        guard let metricsToken else { return false }
        metricsToken.replace(with: BearerToken(token))
        return true
    }

    /// Sends every event stream a heartbeat, so proxies keep it open and a
    /// client that left is noticed.
    public func heartbeat() {
        watchers.heartbeat()
    }

    /// Ends every event stream and long-poll: the server is stopping.
    public func closeWatchers() {
        watchers.closeAll()
    }

    public func respond(to request: MicroHTTPDRequest) -> MicroHTTPDResponse {
        var buffers = ResponseBuffers()
        return respond(to: request, reusing: &buffers)
    }

    public func respond(to request: MicroHTTPDRequest, reusing buffers: inout ResponseBuffers) -> MicroHTTPDResponse {
        let route = Route(pathBytes: request.pathBytes)
        let endpoint = ExchangeEndpoint(route).rawValue
        var response: MicroHTTPDResponse
        if let crossOrigin, let preflight = crossOrigin.preflightAnswer(to: request) {
            // Before the token and the methods: a browser sends neither for it.
            response = preflight
        } else {
            do {
                response = try answer(request, route, endpoint, &buffers)
            } catch {
                response = .complete(error.response)
            }
            crossOrigin?.addHeaders(to: &response, for: request)
        }
        // The state answers, the everyday ones, are made with their endpoint:
        // setting it here copies the answer out of the enum and back.
        if response.endpoint == nil { response.endpoint = endpoint }
        return response
    }

    /// `buffers`: room for a state answer, the everyday one; `endpoint`: the route's, for the answers that name it.
    private func answer(_ request: MicroHTTPDRequest, _ route: Route?, _ endpoint: Int,
                        _ buffers: inout ResponseBuffers) throws(Problem) -> MicroHTTPDResponse {
        // A missing or doubled Host, like ambiguous framing, is refused by the
        // server before the request comes here (see `refusal(of:)`).
        // The access token that allowed this request, if one did: what it opens ends with it.
        var access: AccessToken?
        if authToken != nil || accessGate != nil, Self.isUnderV1(request.pathBytes) {
            access = try authorize(request, route)
        }
        guard let route else {
            throw .notFound("There is no resource at this path; the API lives under /v1/sessions.")
        }
        guard route.allows(request.method) else {
            throw .methodNotAllowed(request.method, allowed: route.allowedMethods)
        }
        // After the method: the paths are the API's, whether this server mints or not.
        if minting == nil, route == .jwks || route.template == .tokens { throw TokenMinting.off }
        if request.isBodyTooLarge {
            throw Problem(status: 413, detail: "The body is larger than the limit of \(maxBodyBytes) bytes.",
                          kind: .contentTooLarge(limit: maxBodyBytes))
        }

        switch route {
        case .health:
            return Self.json(200, ["status": "ok"])
        case .readiness:
            return try readiness.answer(isReady: isReady, authorization: request.headers["Authorization"])
        case .openAPI:
            return MicroHTTPDResponse(status: 200, headers: HTTPHeaders([("Content-Type", "application/yaml")]),
                                body: Array(openAPIDocument.utf8))
        case .metrics:
            if let metricsToken { try Self.checkScraper(request.headers["Authorization"], metricsToken, authToken) }
            // The same question /readyz asks: a store in this process always serves.
            var text = metrics.render(sessions: store.sessionCount, storeUp: store.readiness == .ready,
                                      watchers: watchers.count, statistics: statistics)
            for families in moreMetrics { text += families.render() }
            if let creationLimit { text += creationLimit.render() }
            text += WebSocketMetrics(counts: sockets.counts).render()
            return MicroHTTPDResponse(status: 200, headers: HTTPHeaders([("Content-Type", "text/plain; version=0.0.4; charset=utf-8")]),
                                body: Array(text.utf8))
        case .demo:
            return MicroHTTPDResponse(status: 200, headers: HTTPHeaders([("Content-Type", "text/html; charset=utf-8"),
                                                                   ("Cache-Control", "no-cache")] + demoPageSecurityHeaders),
                                body: Array(demoPage.utf8))
        case .sessions:
            let (inset, settings) = try body(of: request, RequestBodies.newSession)
            let allowance = try creationLimit.map { limit throws(Problem) in try Self.allowance(limit, request) }
            var response = try Self.respond(to: store.requestCreate(inset: inset, settings: settings), Created(),
                                            endpoint: endpoint, ifUnsure: Self.createMayHaveHappened, reusing: &buffers)
            if let allowance { response.addHeaders(allowance) }
            return response
        case .jwks:
            guard let minting else { throw TokenMinting.off }
            return Self.keySetAnswer(minting)
        case .session(nil), .events(nil), .inset(nil), .scroll(nil), .disappear(nil), .behavior(nil), .tokens(nil), .socket(nil):
            // A malformed id names no session: the store is not asked.
            throw Self.notASessionID
        case let .session(id?):
            let preconditions = try Self.preconditions(of: request)
            if request.method == "DELETE" {
                return try Self.respond(to: store.requestRemove(id, if: preconditions.forChange), Removed(),
                                        endpoint: endpoint, reusing: &buffers)
            }
            // Without If-None-Match there is no state to wait past: the answer
            // is the state now, as a read gives it (and `Prefer` is not even read).
            if preconditions.ifNoneMatch != nil, let wait = Self.preferredWait(request, cap: maxWaitSeconds)
                .map({ wait in min(Int64(wait), Self.secondsLeft(access) ?? Int64(wait)) }).flatMap({ $0 > 0 ? Int($0) : nil }) {
                // A long-poll never waits past its token's exp (Mercure's rule): it waits less, or not at all.
                // The wait starts from the state the feed reads once it
                // listens to the session: no change can fall between.
                return try waitForChange(of: id, preconditions, seconds: wait, access: access, endpoint: endpoint)
            }
            return try Self.respond(to: store.requestSession(id), Read(preconditions: preconditions), endpoint: endpoint,
                                    reusing: &buffers)
        case let .events(id?):
            guard request.method == "GET" else {
                // HEAD: the stream's headers without a stream or a watcher.
                let headers = eventStreamHeaders
                return try Self.respond(to: store.requestSession(id), endpoint: endpoint) { session throws(Problem) in
                    guard session != nil else { throw Self.unknownSession }
                    return Self.emptyEventStream(headers)
                }
            }
            return try eventStream(of: id, lastEventID: request.headers["Last-Event-ID"], access: access,
                                   endsAfter: Self.secondsLeft(access), endpoint: endpoint)
        case let .socket(id?):
            return try openSocket(request, of: id, access: access, endpoint: endpoint)
        case let .inset(id?):
            let inset = try body(of: request, RequestBodies.inset)
            return try apply(.setInset(inset), to: id, request, endpoint, &buffers)
        case let .scroll(id?):
            return switch try body(of: request, RequestBodies.scrollInputs) {
            case let .report(input): try apply(input, to: id, request, endpoint, &buffers)
            case let .batch(inputs): try apply(inputs, to: id, request, endpoint, &buffers)
            }
        case let .disappear(id?):
            try body(of: request, RequestBodies.disappear)
            return try apply(.disappear, to: id, request, endpoint, &buffers)
        case let .behavior(id?):
            let settings = try body(of: request, RequestBodies.behavior)
            return try apply(.setBehavior(settings), to: id, request, endpoint, &buffers)
        case let .tokens(id?):
            guard let minting else { throw TokenMinting.off }
            return try mintToken(for: id, request, minting, endpoint: endpoint)
        }
    }

    /// One input, the usual change: no array is built for it.
    private func apply(_ input: ChromeInput, to id: SessionID, _ request: MicroHTTPDRequest, _ endpoint: Int,
                       _ buffers: inout ResponseBuffers) throws(Problem) -> MicroHTTPDResponse {
        let condition = try Self.preconditions(of: request).forChange
        return try Self.respond(to: store.requestApply(input, to: id, if: condition), Changed(), endpoint: endpoint,
                                reusing: &buffers)
    }

    private func apply(_ inputs: [ChromeInput], to id: SessionID, _ request: MicroHTTPDRequest, _ endpoint: Int,
                       _ buffers: inout ResponseBuffers) throws(Problem) -> MicroHTTPDResponse {
        let condition = try Self.preconditions(of: request).forChange
        return try Self.respond(to: store.requestApply(inputs, to: id, if: condition), Changed(), endpoint: endpoint,
                                reusing: &buffers)
    }

    /// The global token passes everything; else an access token passes what it allows.
    /// Returns the access token, nil for the global one.
    private func authorize(_ request: MicroHTTPDRequest, _ route: Route?) throws(Problem) -> AccessToken? {
        guard let authorization = request.headers["Authorization"] else { throw BearerToken.missing }
        guard let credentials = BearerToken.credentials(in: authorization) else { throw BearerToken.invalid }
        if let authToken, authToken.value.matches(credentials) { return nil }
        guard let accessGate else { throw BearerToken.invalid }
        return try accessGate.authorize(credentials, request.method, on: route)
    }

    /// Seconds the access token has left (none: nil); a watch ends by then.
    static func secondsLeft(_ access: AccessToken?) -> Int64? {
        access.map { $0.expiresAt - Int64(time(nil)) }
    }

    /// `/metrics` tells what `/readyz` keeps to operators (state-file
    /// failures, session counts, request rates): with a metrics token it
    /// answers that token, or the API's own, which opens more already.
    private static func checkScraper(_ authorization: String?, _ metricsToken: CurrentBearerToken,
                                     _ authToken: CurrentBearerToken?) throws(Problem) {
        do {
            try metricsToken.value.check(authorization)
        } catch {
            guard let authToken, (try? authToken.value.check(authorization)) != nil else { throw error }
        }
    }

    public func refusalWhileStopping() -> CompleteResponse {
        Self.shuttingDown.response
    }
}
