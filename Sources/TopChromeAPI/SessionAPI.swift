import MicroHTTPD
import StrictJSON
import Synchronization
import TopChromeCore

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

    /// Where sessions live: in this process, answering at once, or in
    /// another (Redis), answering later while the request waits.
    private enum Backend {
        case local(any SessionStore & SessionChangeFeed)
        case remote(any RemoteSessionStore & RemoteChangeFeed)
    }

    private let backend: Backend
    private let watchers: WatcherHub
    /// Families of `/metrics` that the store's wiring adds (e.g. Redis round trips).
    private let storeMetrics: (any MetricsFamilies)?
    private let readiness: Readiness
    private let maxBodyBytes: Int
    /// Nil when no token is configured: then requests never read it.
    private let authToken: CurrentBearerToken?
    private let metrics: ServiceMetrics
    private let statistics: ChromeStatistics
    private let ready = Atomic<Bool>(true)
    /// Web pages on other origins allowed to call; nil (the default) costs one check per request.
    private let crossOrigin: CrossOriginPolicy?

    public convenience init(store: any SessionStore & SessionChangeFeed, maxBodyBytes: Int, authToken: String? = nil,
                            maxWaitSeconds: Int = 60, metrics: ServiceMetrics = ServiceMetrics(),
                            statistics: ChromeStatistics = ChromeStatistics(), storeMetrics: (any MetricsFamilies)? = nil,
                            readinessDetails: [any ReadinessDetail] = [], crossOrigin: CrossOriginPolicy? = nil) {
        self.init(backend: .local(store), maxBodyBytes: maxBodyBytes, authToken: authToken, maxWaitSeconds: maxWaitSeconds,
                  metrics: metrics, statistics: statistics, storeMetrics: storeMetrics, readinessDetails: readinessDetails,
                  crossOrigin: crossOrigin)
    }

    /// The API over a store in another process, shared by every replica.
    public convenience init(remoteStore: any RemoteSessionStore & RemoteChangeFeed, maxBodyBytes: Int,
                            authToken: String? = nil, maxWaitSeconds: Int = 60, metrics: ServiceMetrics = ServiceMetrics(),
                            statistics: ChromeStatistics = ChromeStatistics(), storeMetrics: (any MetricsFamilies)? = nil,
                            crossOrigin: CrossOriginPolicy? = nil) {
        self.init(backend: .remote(remoteStore), maxBodyBytes: maxBodyBytes, authToken: authToken,
                  maxWaitSeconds: maxWaitSeconds, metrics: metrics, statistics: statistics, storeMetrics: storeMetrics,
                  readinessDetails: [], crossOrigin: crossOrigin)
    }

    private init(backend: Backend, maxBodyBytes: Int, authToken: String?, maxWaitSeconds: Int, metrics: ServiceMetrics,
                 statistics: ChromeStatistics, storeMetrics: (any MetricsFamilies)?, readinessDetails: [any ReadinessDetail],
                 crossOrigin: CrossOriginPolicy?) {
        self.maxWaitSeconds = maxWaitSeconds
        self.backend = backend
        self.watchers = switch backend {
        case let .local(store): WatcherHub(feed: .local(store))
        case let .remote(store): WatcherHub(feed: .remote(store))
        }
        self.storeMetrics = storeMetrics
        self.maxBodyBytes = maxBodyBytes
        let token = authToken.map { CurrentBearerToken(BearerToken($0)) }
        self.authToken = token
        let storeReadiness: (@Sendable () -> RemoteStoreReadiness)? = switch backend {
        case .local: nil
        case let .remote(store): { store.readiness }
        }
        readiness = Readiness(store: storeReadiness, details: readinessDetails, authToken: token)
        self.metrics = metrics
        self.statistics = statistics
        self.crossOrigin = crossOrigin
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

    /// Sends every event stream a heartbeat, so proxies keep it open and a
    /// client that left is noticed.
    public func heartbeat() {
        watchers.heartbeat()
    }

    /// Ends every event stream and long-poll: the server is stopping.
    public func closeWatchers() {
        watchers.closeAll()
    }

    public func respond(to request: HTTPRequest) -> HTTPResponse {
        var buffers = ResponseBuffers()
        return respond(to: request, reusing: &buffers)
    }

    public func respond(to request: HTTPRequest, reusing buffers: inout ResponseBuffers) -> HTTPResponse {
        let route = Route(pathBytes: request.pathBytes)
        var response: HTTPResponse
        if let crossOrigin, let preflight = crossOrigin.preflightAnswer(to: request) {
            // Before the token and the methods: a browser sends neither for it.
            response = preflight
        } else {
            do {
                response = try answer(request, route, &buffers)
            } catch {
                response = .complete(error.response)
            }
            crossOrigin?.addHeaders(to: &response, for: request)
        }
        // A new session's id is not in the path; its answer names it already.
        if response.endpoint == nil { response.endpoint = ExchangeEndpoint(route).rawValue }
        return response
    }

    /// `buffers`: room for a state answer, the everyday one.
    private func answer(_ request: HTTPRequest, _ route: Route?,
                        _ buffers: inout ResponseBuffers) throws(Problem) -> HTTPResponse {
        // A missing or doubled Host, like ambiguous framing, is refused by the
        // server before the request comes here (see `refusal(of:)`).
        if let authToken, Self.isUnderV1(request.pathBytes) {
            try authToken.value.check(request.headers["Authorization"])
        }
        guard let route else {
            throw .notFound("There is no resource at this path; the API lives under /v1/sessions.")
        }
        guard route.allows(request.method) else {
            throw .methodNotAllowed(request.method, allowed: route.allowedMethods)
        }
        if request.isBodyTooLarge {
            throw Problem(status: 413, detail: "The body is larger than the limit of \(maxBodyBytes) bytes.")
        }

        switch route {
        case .health:
            return Self.json(200, ["status": "ok"])
        case .readiness:
            return try readiness.answer(isReady: isReady, authorization: request.headers["Authorization"])
        case .openAPI:
            return HTTPResponse(status: 200, headers: HTTPHeaders([("Content-Type", "application/yaml")]),
                                body: Array(openAPIDocument.utf8))
        case .metrics:
            // The same question /readyz asks: a store in this process always serves.
            let (sessions, storeUp): (Int?, Bool) = switch backend {
            case let .local(store): (store.count, true)
            case let .remote(store): (nil, store.readiness == .ready)
            }
            var text = metrics.render(sessions: sessions, storeUp: storeUp, watchers: watchers.count, statistics: statistics)
            if let storeMetrics { text += storeMetrics.render() }
            return HTTPResponse(status: 200, headers: HTTPHeaders([("Content-Type", "text/plain; version=0.0.4; charset=utf-8")]),
                                body: Array(text.utf8))
        case .demo:
            return HTTPResponse(status: 200, headers: HTTPHeaders([("Content-Type", "text/html; charset=utf-8"),
                                                                   ("Cache-Control", "no-cache")]),
                                body: Array(demoPage.utf8))
        case .sessions:
            let inset = try body(of: request, RequestBodies.newSession)
            switch backend {
            case let .local(store):
                do {
                    return .complete(Self.created(try store.create(inset: inset), reusing: &buffers))
                } catch {
                    switch error {
                    case let .full(capacity):
                        throw Problem(status: 503, detail: "The server holds its maximum of \(capacity) sessions; try again later.",
                                      headers: [("Retry-After", String(Self.retryAfterWhenFull))])
                    }
                }
            case let .remote(store):
                return Self.later({ store.create(inset: inset, reply: $0) }, ifUnsure: Self.createMayHaveHappened, Self.created)
            }
        case .session(nil), .events(nil), .inset(nil), .scroll(nil), .disappear(nil):
            // A malformed id names no session: the store is not asked.
            throw Self.notASessionID
        case let .session(id?):
            let preconditions = try Self.preconditions(of: request)
            switch (backend, request.method == "DELETE") {
            case let (.local(store), true):
                return .complete(try Self.removed(store.remove(id, if: preconditions.forChange)))
            case let (.remote(store), true):
                return Self.later({ store.remove(id, if: preconditions.forChange, reply: $0) }, Self.removed)
            case let (.local(store), false):
                guard let session = store.session(id) else { throw Self.unknownSession }
                let response = try Self.read(session, preconditions, reusing: &buffers)
                if response.status == 304, let wait = Self.preferredWait(request, cap: maxWaitSeconds) {
                    return try waitForChange(of: id, isNew: preconditions.noneMatchCondition, seconds: wait, in: store)
                }
                return .complete(response)
            case let (.remote(store), false):
                if let wait = Self.preferredWait(request, cap: maxWaitSeconds) {
                    // The wait starts from the state the feed reads once it
                    // listens to the session: no change can fall between.
                    return try waitForChange(of: id, preconditions, seconds: wait, in: store)
                }
                return Self.later({ store.session(id, reply: $0) }) { session throws(Problem) in
                    guard let session else { throw Self.unknownSession }
                    return try Self.read(session, preconditions)
                }
            }
        case let .events(id?):
            guard request.method == "GET" else {
                // HEAD: the stream's headers without a stream or a watcher.
                switch backend {
                case let .local(store):
                    guard store.session(id) != nil else { throw Self.unknownSession }
                    return .stream(Self.emptyEventStream())
                case let .remote(store):
                    return Self.later({ store.session(id, reply: $0) }) { session throws(Problem) in
                        guard session != nil else { throw Self.unknownSession }
                        return Self.emptyEventStream()
                    }
                }
            }
            return try eventStream(of: id, lastEventID: request.headers["Last-Event-ID"])
        case let .inset(id?):
            let inset = try body(of: request, RequestBodies.inset)
            return try apply(.setInset(inset), to: id, request, &buffers)
        case let .scroll(id?):
            return switch try body(of: request, RequestBodies.scrollInputs) {
            case let .report(input): try apply(input, to: id, request, &buffers)
            case let .batch(inputs): try apply(inputs, to: id, request, &buffers)
            }
        case let .disappear(id?):
            try body(of: request, RequestBodies.disappear)
            return try apply(.disappear, to: id, request, &buffers)
        }
    }

    /// `/v1` and everything under `/v1/`: what the bearer token guards.
    private static func isUnderV1(_ path: [UInt8]) -> Bool {
        path.starts(with: "/v1".utf8) && (path.count == 3 || path[3] == UInt8(ascii: "/"))
    }

    public func refusalWhileStopping() -> CompleteResponse {
        Self.shuttingDown.response
    }

    static let shuttingDown = Problem(status: 503, detail: "The server is shutting down.", headers: [("Retry-After", "1")])

    static let changesUnheard = Problem(
        status: 503, detail: "The session store was lost while waiting for a change, so the session's state is unknown; try again.",
        headers: [("Retry-After", "1")])

    /// Still 404 (no such resource), but a client that mangled the id (upper
    /// case, a UUID's dashes) learns that, rather than that it expired.
    static let notASessionID = Problem.notFound(
        "This is not a session id: an id is 32 lower-case hexadecimal digits (not all zero), without dashes, as POST /v1/sessions returns it.")

    static let unknownSession = Problem.notFound(
        "No session has this id; it may have been deleted or expired after being idle.")

    /// `Prefer: wait=N` (RFC 7240), capped; nil when absent or 0. Values
    /// may be quoted and preferences may carry parameters (`wait=5; x=y`).
    /// A number of seconds too large for an `Int` is still a long wait: the cap.
    static func preferredWait(_ request: HTTPRequest, cap: Int) -> Int? {
        guard let prefer = request.headers.combined("Prefer") else { return nil }
        for preference in prefer.split(separator: ",") {
            let token = preference.split(separator: ";", maxSplits: 1).first ?? ""
            let parts = token.split(separator: "=", maxSplits: 1).map { String($0.trimmingOWS) }
            guard parts.count == 2, parts[0].lowercased() == "wait" else { continue }
            let value = parts[1].hasPrefix("\"") && parts[1].hasSuffix("\"") && parts[1].count >= 2
                ? String(parts[1].dropFirst().dropLast()) : parts[1]
            if let seconds = Int(value), seconds > 0 { return min(seconds, cap) }
            if !value.isEmpty, value.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
               value.contains(where: { $0 != "0" }) {
                return cap
            }
        }
        return nil
    }

    /// A long-poll: answers when the session reaches a version the client
    /// does not have, or with 304 when the time is up. Holds no thread meanwhile.
    private func waitForChange(of id: SessionID, isNew: VersionCondition, seconds: Int,
                               in feed: any SessionChangeFeed) throws(Problem) -> HTTPResponse {
        let watcher = LongPollWatcher(id: id, isNew: isNew, waitSeconds: seconds)
        guard let current = try watch(id, by: watcher, in: feed) else { throw Self.unknownSession }
        watcher.start(with: current, hub: watchers)
        return .later(watcher.pending)
    }

    /// A long-poll on a store in another process: subscribed first, then
    /// the preconditions are checked against the state the feed read.
    private func waitForChange(of id: SessionID, _ preconditions: Preconditions, seconds: Int,
                               in feed: any RemoteChangeFeed) throws(Problem) -> HTTPResponse {
        let watcher = LongPollWatcher(id: id, isNew: preconditions.noneMatchCondition, waitSeconds: seconds)
        try watch(id, by: watcher, in: feed, answering: watcher.pending) { [watchers] current throws(Problem) in
            guard preconditions.matchCondition.holds(for: current.entityTag) else { throw Self.preconditionFailed }
            watcher.start(with: current, hub: watchers)
        }
        return .later(watcher.pending)
    }

    /// Server-Sent Events: the current state at once, then every change.
    private func eventStream(of id: SessionID, lastEventID: String?) throws(Problem) -> HTTPResponse {
        let lastEventID = lastEventID.flatMap { EntityTag($0.trimmingOWS.utf8) }
        let stream = ResponseStream()
        let watcher = EventStreamWatcher(id: id, stream: stream)
        // Only for a stream that goes out: the server closes it, which ends
        // the watch; one that never goes out would hold its watcher (and
        // through it the store) forever.
        let response: @Sendable () -> StreamingResponse = { [watchers] in
            stream.onClose { watchers.remove(watcher, for: id) }
            return StreamingResponse(status: 200, headers: Self.eventStreamHeaders, stream: stream)
        }
        switch backend {
        case let .local(store):
            guard let current = try watch(id, by: watcher, in: store) else { throw Self.unknownSession }
            watcher.start(with: current, lastEventID: lastEventID)
            return .stream(response())
        case let .remote(feed):
            let pending = PendingResponse()
            try watch(id, by: watcher, in: feed, answering: pending) { current in
                watcher.start(with: current, lastEventID: lastEventID)
                pending.complete(with: response())
            }
            return .later(pending)
        }
    }

    /// An event stream's answer to HEAD. An endless body has no length to
    /// state (RFC 9110 §8.6): a stream, ended before it began.
    private static func emptyEventStream() -> StreamingResponse {
        let stream = ResponseStream()
        stream.finish()
        return StreamingResponse(status: 200, headers: eventStreamHeaders, stream: stream)
    }

    /// `X-Accel-Buffering: no` keeps reverse proxies (nginx) from holding events back.
    private static let eventStreamHeaders = HTTPHeaders([
        ("Content-Type", "text/event-stream"), ("Cache-Control", "no-store"), ("X-Accel-Buffering", "no"),
    ])

    /// Subscribes the watcher; the session as it is then, or nil if there is none.
    private func watch(_ id: SessionID, by watcher: any SessionWatcher, in feed: any SessionChangeFeed) throws(Problem) -> Session? {
        // Stopping: watchers are being closed; a new one would be cut off at once.
        guard isReady else { throw Self.shuttingDown }
        do {
            return try feed.subscribe(watcher, to: id)
        } catch {
            throw Self.refused(error)
        }
    }

    /// Subscribes the watcher to a remote feed; `start` runs with the session
    /// once the feed listens to it. If there is none, the store failed, or
    /// `start` throws, the watch ends and `pending` answers with the problem.
    private func watch(_ id: SessionID, by watcher: any SessionWatcher, in feed: any RemoteChangeFeed,
                       answering pending: PendingResponse,
                       start: @escaping @Sendable (Session) throws(Problem) -> Void) throws(Problem) {
        guard isReady else { throw Self.shuttingDown }
        do {
            try feed.subscribe(watcher, to: id) { [watchers] result in
                do throws(Problem) {
                    guard let current = try Self.value(result) else { throw Self.unknownSession }
                    try start(current)
                } catch {
                    watchers.remove(watcher, for: id)
                    pending.complete(with: error.response)
                }
            }
        } catch {
            throw Self.refused(error)
        }
    }

    private static func refused(_ refusal: SubscriptionRefusal) -> Problem {
        let detail = switch refusal {
        case let .tooManySubscribers(limit): "The server has its maximum of \(limit) watchers; try again later."
        case let .tooManyForSession(limit): "This session has its maximum of \(limit) watchers; try again later."
        }
        return Problem(status: 503, detail: detail, headers: [("Retry-After", String(Self.retryAfterWhenWatched))])
    }

    private static let preconditionFailed = Problem(
        status: 412, detail: "If-Match or If-None-Match does not hold for the session's current version; nothing was changed.")

    /// One input, the usual change: no array is built for it.
    private func apply(_ input: ChromeInput, to id: SessionID, _ request: HTTPRequest,
                       _ buffers: inout ResponseBuffers) throws(Problem) -> HTTPResponse {
        switch backend {
        case let .local(store):
            .complete(try Self.changed(store.apply(input, to: id, if: Self.preconditions(of: request).forChange), reusing: &buffers))
        case .remote: try apply([input], to: id, request, &buffers)
        }
    }

    private func apply(_ inputs: [ChromeInput], to id: SessionID, _ request: HTTPRequest,
                       _ buffers: inout ResponseBuffers) throws(Problem) -> HTTPResponse {
        let condition = try Self.preconditions(of: request).forChange
        switch backend {
        case let .local(store):
            return .complete(try Self.changed(store.apply(inputs, to: id, if: condition), reusing: &buffers))
        case let .remote(store):
            return Self.later({ store.apply(inputs, to: id, if: condition, reply: $0) }, Self.changed)
        }
    }

    // MARK: Answers

    /// A request that waits, holding no thread, for a store in another
    /// process: `ask` asks it, and its reply is answered with `respond` of
    /// the value, or with the problem.
    private static func later<Value>(_ ask: (@escaping RemoteReply<Value>) -> Void,
                                     ifUnsure: String = changeMayHaveHappened,
                                     _ respond: @escaping @Sendable (Value) throws(Problem) -> CompleteResponse) -> HTTPResponse {
        let pending = PendingResponse()
        ask { result in
            do throws(Problem) {
                pending.complete(with: try respond(value(result, ifUnsure: ifUnsure)))
            } catch {
                pending.complete(with: error.response)
            }
        }
        return .later(pending)
    }

    /// ``later(_:ifUnsure:_:)`` for an answer that is a stream.
    private static func later<Value>(_ ask: (@escaping RemoteReply<Value>) -> Void,
                                     _ respond: @escaping @Sendable (Value) throws(Problem) -> StreamingResponse) -> HTTPResponse {
        let pending = PendingResponse()
        ask { result in
            do throws(Problem) {
                pending.complete(with: try respond(value(result)))
            } catch {
                pending.complete(with: error.response)
            }
        }
        return .later(pending)
    }

    /// What a client is told when its request reached the store and the answer did not come back.
    private static let changeMayHaveHappened = "The change may have been made: read the session to know."
    /// A create's id is in its answer: a client that lost it cannot read the session it may have made.
    private static let createMayHaveHappened = "A session may have been created, but its id was lost with the answer: create another."

    private static func value<Value>(_ result: Result<Value, RemoteStoreError>,
                                     ifUnsure: String = changeMayHaveHappened) throws(Problem) -> Value {
        switch result {
        case let .success(value):
            return value
        case .failure(.full):
            throw Problem(status: 503, detail: "The session store is full (Redis is at its memory limit); nothing was changed. Try again later.",
                          headers: [("Retry-After", String(retryAfterWhenFull))])
        case let .failure(.unavailable(reason, mayHaveApplied)):
            let outcome = " " + (mayHaveApplied ? ifUnsure : "Nothing was changed.")
            throw Problem(status: 503, detail: "The session store did not answer (\(reason)); try again." + outcome,
                          headers: [("Retry-After", "1")])
        }
    }

    private static func created(_ session: Session) -> CompleteResponse {
        var buffers = ResponseBuffers()
        return created(session, reusing: &buffers)
    }

    private static func created(_ session: Session, reusing buffers: inout ResponseBuffers) -> CompleteResponse {
        var response = stateAnswer(session, status: 201, reusing: &buffers)
        response.headers.add(name: "Location", value: "/v1/sessions/\(session.id)")
        // The access log ties the session's later lines to its creation.
        response.endpoint = ExchangeEndpoint(template: .sessions, session: session.id).rawValue
        return response
    }

    private static func removed(_ outcome: StoreOutcome) throws(Problem) -> CompleteResponse {
        switch outcome {
        case .done: return CompleteResponse(status: 204)
        case .conditionFailed: throw preconditionFailed
        case .notFound: throw unknownSession
        }
    }

    /// A read's answer: 412 if `If-Match` fails, 304 if the client has this version.
    private static func read(_ session: Session, _ preconditions: Preconditions) throws(Problem) -> CompleteResponse {
        var buffers = ResponseBuffers()
        return try read(session, preconditions, reusing: &buffers)
    }

    private static func read(_ session: Session, _ preconditions: Preconditions,
                             reusing buffers: inout ResponseBuffers) throws(Problem) -> CompleteResponse {
        let tag = session.entityTag
        guard preconditions.matchCondition.holds(for: tag) else { throw preconditionFailed }
        var response = stateAnswer(session, reusing: &buffers)
        if !preconditions.noneMatchCondition.holds(for: tag) {
            // Not modified: the headers of the 200 it stands for. The server
            // sends no body with a 304 but states this body's length, as RFC 9110 wants.
            response.status = 304
        }
        return response
    }

    /// The answer to a change: the state it left, or why it was not made.
    private static func changed(_ outcome: StoreOutcome) throws(Problem) -> CompleteResponse {
        var buffers = ResponseBuffers()
        return try changed(outcome, reusing: &buffers)
    }

    private static func changed(_ outcome: StoreOutcome, reusing buffers: inout ResponseBuffers) throws(Problem) -> CompleteResponse {
        switch outcome {
        case let .done(session, staleReports):
            var response = Self.stateAnswer(session, reusing: &buffers)
            // Still 200 (the report was received, and the state is current),
            // but a client whose seq went backwards must be able to notice.
            if staleReports > 0 { response.headers.add(name: "TopChrome-Stale-Reports", value: String(staleReports)) }
            return response
        case .conditionFailed: throw Self.preconditionFailed
        case .notFound: throw Self.unknownSession
        }
    }

    private static func preconditions(of request: HTTPRequest) throws(Problem) -> Preconditions {
        try Preconditions(ifMatch: request.headers.combined("If-Match"), ifNoneMatch: request.headers.combined("If-None-Match"))
    }

    /// Checks the media type, then reads the body with `read`.
    private func body<Value>(
        of request: HTTPRequest, _ read: ([UInt8]) throws(BodyError) -> Value
    ) throws(Problem) -> Value {
        // An empty body has no media type to speak of (`curl -X POST -d ''` labels it a form).
        // `application/json` exactly, as nearly every client sends it, is checked without making a String.
        if !request.body.isEmpty, !request.headers.first("Content-Type", is: "application/json"),
           let type = request.headers["Content-Type"], !Self.isJSON(type) {
            throw Problem(status: 415, detail: "Bodies must be JSON (Content-Type: application/json), not \"\(type.prefix(64))\". With curl, use --json instead of -d.")
        }
        do {
            return try read(request.body)
        } catch {
            throw .badRequest(error.detail)
        }
    }

    /// `application/json` or any `+json` type, parameters allowed.
    static func isJSON(_ contentType: String) -> Bool {
        let mediaType = contentType.split(separator: ";", maxSplits: 1).first?
            .trimmingOWS.lowercased() ?? ""
        return mediaType == "application/json" || (mediaType.hasPrefix("application/") && mediaType.hasSuffix("+json"))
    }

    /// `"<version>.<tag>"`: the version, and the tag that tells this state
    /// from any other that had the version (see `StateTag`).
    static func etag(_ session: Session) -> String {
        withETag(of: session) { String(decoding: $0, as: UTF8.self) }
    }

    /// The entity tag's bytes, written on the stack: every state answer
    /// carries one, and it goes into the headers without becoming a `String`.
    private static func withETag<Result>(of session: Session, _ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: EntityTag.maxLength + 2) { text in
            text[0] = UInt8(ascii: "\"")
            let end = session.entityTag.write(into: text, at: 1)
            text[end] = UInt8(ascii: "\"")
            return body(UnsafeBufferPointer(rebasing: text[...end]))
        }
    }

    static func stateAnswer(_ session: Session, status: Int = 200) -> CompleteResponse {
        var buffers = ResponseBuffers()
        return stateAnswer(session, status: status, reusing: &buffers)
    }

    static func stateAnswer(_ session: Session, status: Int = 200, reusing buffers: inout ResponseBuffers) -> CompleteResponse {
        var headers = buffers.takeHeaders()
        headers.reserveCapacity(128)  // room for the ETag and a Location
        headers.add(name: "Content-Type", value: "application/json")
        withETag(of: session) { headers.add(name: "ETag", value: $0) }
        var body = buffers.takeBody()
        StateWriter.write(session, to: &body)
        return CompleteResponse(status: status, headers: headers, body: body)
    }

    private static func json(_ status: Int, _ members: KeyValuePairs<String, String>) -> HTTPResponse {
        var json = JSONWriter()
        json.object { object in
            for (name, value) in members { object.member(name) { $0.string(value) } }
        }
        return HTTPResponse(status: status, headers: HTTPHeaders([("Content-Type", "application/json")]), body: json.bytes)
    }
}
