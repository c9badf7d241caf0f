import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import TopChromeCore

/// The TopChrome service as an app sees it: sessions to create or attach
/// to, each with its own ordered queue of changes and its event stream.
public final class ChromeService: Sendable {
    /// What the client does when the network or the service falters, and
    /// how fast it sends.
    public struct Configuration: Sendable {
        /// Retries of requests and reconnections of event streams.
        public var retry = RetryPolicy()
        /// Seconds a request may take before it counts as a network error.
        public var requestTimeout: Double = 30
        /// Seconds an event stream may stay silent before it is taken for
        /// dead and reconnected. `nil` (the default): twice the heartbeat
        /// the service names on the stream (`TopChrome-Heartbeat`, its
        /// `--heartbeat`), so one late heartbeat is forgiven and a stopped
        /// server is noticed within two; 30 s until it names one, or from
        /// a proxy that drops the header. `.infinity`: never.
        public var streamIdleTimeout: Double?
        /// Seconds an event stream must stay open before its backoff starts
        /// again from the first delay (as LaunchDarkly's EventSource does):
        /// a proxy that answers and closes at once is retried ever more slowly.
        public var stableConnectionInterval: Double = 60
        /// The least time between the starts of two requests of one session,
        /// in seconds; reports that arrive meanwhile are reduced to the
        /// newest. 50 ms is about one frame budget of the service: steady
        /// 120 Hz scrolling costs at most 20 requests a second.
        public var minimumSendInterval: Double = 0.05
        /// The largest request body sent, in bytes: reports are batched
        /// below it. The service's `--max-body-bytes` (64 KiB by default);
        /// a session that meets a smaller one learns it from the 413's
        /// `maxBodyBytes` and splits what it holds to fit.
        public var maximumBodyBytes = 65_536
        /// Seconds a report keeps being retried while the service is out of
        /// reach (unreachable, 503, 429) before it counts as lost.
        public var reportRetention: Double = 120
        /// Reports a session keeps in order while they cannot be sent (an
        /// outage): 16,384 is over two minutes of scrolling at 120 Hz.
        /// A request on the wire is not counted (it cannot be shortened).
        /// Beyond it the oldest are dropped, each counted in
        /// `RemoteTopChrome.reportsLost`, never silently.
        public var maximumQueuedReports = 16_384
        /// States a slow reader of `states()` may fall behind by; beyond
        /// that the oldest are dropped (the newest state wins).
        public var stateBufferLimit = 16
        /// Whether a session that is followed also sends its changes on one
        /// WebSocket (`GET /v1/sessions/{id}/socket`) that brings its states,
        /// instead of a request per change and an event stream: no request
        /// to pay per report, no pacing interval to wait out. Where the
        /// upgrade is refused (a proxy that passes no WebSocket) the session
        /// goes on over HTTP and the event stream. Off where Foundation's
        /// networking is libcurl's (Linux), whose Debian build has no
        /// WebSocket; on elsewhere.
        #if canImport(FoundationNetworking)
        public var usesWebSocket = false
        #else
        public var usesWebSocket = true
        #endif
        /// Opens the socket; `URLSessionWebSocketTask` unless a test gives another.
        package var socketOpener: ChromeSocketOpener?
        /// Told what the client does about trouble (a stale report
        /// renumbered, a failed report, a reconnection), for the app's log.
        public var log: (@Sendable (String) -> Void)?

        public init() {}
    }

    public let baseURL: URL
    public let configuration: Configuration
    let token: Token
    let urlSession: URLSession
    let openSocket: ChromeSocketOpener

    /// Where the bearer token comes from: fixed, or asked for before every
    /// request (tokens that rotate); told which token the service refused.
    enum Token: Sendable {
        case fixed(String?)
        case provider(@Sendable (_ refused: String?) async throws -> String?)

        func value(refused: String? = nil) async throws -> String? {
            switch self {
            case let .fixed(token): token
            case let .provider(provide): try await provide(refused)
            }
        }
    }

    /// A client with a fixed token (or none).
    public convenience init(baseURL: URL, bearerToken: String?, configuration: Configuration = Configuration(),
                            urlSessionConfiguration: URLSessionConfiguration = .ephemeral) {
        self.init(baseURL: baseURL, token: .fixed(bearerToken), configuration: configuration,
                  urlSessionConfiguration: urlSessionConfiguration)
    }

    /// A client that asks `tokenProvider` for the bearer token before every
    /// request and every stream (re)connection, so a rotated token is used
    /// from the next request on. `urlSessionConfiguration` is copied and
    /// used for the short requests (proxies, cellular access, headers).
    public convenience init(baseURL: URL, configuration: Configuration = Configuration(),
                            urlSessionConfiguration: URLSessionConfiguration = .ephemeral,
                            tokenProvider: @escaping @Sendable () async throws -> String?) {
        self.init(baseURL: baseURL, token: .provider { _ in try await tokenProvider() }, configuration: configuration,
                  urlSessionConfiguration: urlSessionConfiguration)
    }

    /// A client for short-lived tokens (the service's access tokens, or a
    /// global token that is rotated): `tokens` is asked with nil before
    /// every request and stream (re)connection, and, when the service
    /// refuses a token as invalid (`401`, `error="invalid_token"`: expired,
    /// revoked, rotated away) or a stream ends with its token (`expired`),
    /// with that token, so it fetches a new one from the app's backend
    /// rather than hand back the one it holds. The request is then sent once
    /// more, and the stream resumes from its last event: the app sees no gap.
    public convenience init(baseURL: URL, configuration: Configuration = Configuration(),
                            urlSessionConfiguration: URLSessionConfiguration = .ephemeral,
                            tokens: @escaping @Sendable (_ refused: String?) async throws -> String?) {
        self.init(baseURL: baseURL, token: .provider(tokens), configuration: configuration,
                  urlSessionConfiguration: urlSessionConfiguration)
    }

    init(baseURL: URL, token: Token, configuration: Configuration, urlSessionConfiguration: URLSessionConfiguration) {
        self.baseURL = baseURL
        self.token = token
        self.configuration = configuration
        let sessionConfiguration = urlSessionConfiguration.copy() as? URLSessionConfiguration ?? .ephemeral
        sessionConfiguration.timeoutIntervalForRequest = configuration.requestTimeout
        urlSession = URLSession(configuration: sessionConfiguration)
        openSocket = configuration.socketOpener ?? URLSessionChromeSocket.opener(in: urlSession)
    }

    deinit { urlSession.finishTasksAndInvalidate() }

    func log(_ message: @autoclosure () -> String) {
        configuration.log?(message())
    }

    /// Creates a session on the service, with the service's defaults for
    /// what is not given (`revealAtTop`, the whole inset collapsing, no
    /// snapping). A 503 when the service is full is retried; if a retry
    /// follows a request that did arrive, the extra session is never used
    /// and expires with the service's session TTL.
    public func createSession(inset: Double? = nil, behavior: RevealBehavior? = nil, collapsibleHeight: Double? = nil,
                              snap: Bool? = nil) async throws -> ChromeSession {
        let settings = NewSessionBody(inset: inset, behavior: behavior?.rawValue, collapsibleHeight: collapsibleHeight, snap: snap)
        // No body at all when nothing is chosen, as before behaviours.
        let body = settings == NewSessionBody() ? nil : try Self.encode(settings)
        let data = try await send(request("POST", "v1/sessions", body: body), sessionID: nil)
        let state = try Self.decodeState(data)
        return ChromeSession(id: state.id, client: self, known: state)
    }

    /// A session that already exists, by id: nothing is sent until it is used.
    public func session(id: String) -> ChromeSession {
        ChromeSession(id: id, client: self, known: nil)
    }

    // MARK: Requests

    func request(_ method: String, _ path: String, body: Data? = nil, refusedToken: String? = nil) async throws -> URLRequest {
        let bearerToken = try await token.value(refused: refusedToken)
        var request = URLRequest(url: baseURL.appendingPathComponent(path))
        request.httpMethod = method
        request.timeoutInterval = configuration.requestTimeout
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        if let body {
            request.httpBody = body
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        if let bearerToken { request.setValue("Bearer \(bearerToken)", forHTTPHeaderField: "Authorization") }
        return request
    }

    /// What one attempt came to.
    enum Outcome: Sendable {
        /// `staleReports`: how many reports the service ignored as stale
        /// (`TopChrome-Stale-Reports`).
        case success(Data, status: Int, staleReports: Int = 0)
        case retryable(TopChromeError, retryAfter: Double?)
        case failure(TopChromeError)
    }

    /// One attempt, classified: network errors, 503 and 429 may pass if
    /// tried again; other refusals would only be refused again, but for a
    /// token refused as invalid, which is renewed and sent once more.
    func attempt(_ request: URLRequest, sessionID: String?) async throws -> Outcome {
        let (outcome, refused) = try await attemptOnce(request, sessionID: sessionID)
        guard let refused, case .provider = token,
              let renewed = try await token.value(refused: refused), renewed != refused else { return outcome }
        var again = request
        again.setValue("Bearer \(renewed)", forHTTPHeaderField: "Authorization")
        return try await attemptOnce(again, sessionID: sessionID).outcome
    }

    /// One attempt, and the bearer token it carried if the service refused
    /// it as invalid.
    private func attemptOnce(_ request: URLRequest, sessionID: String?) async throws -> (outcome: Outcome, refusedToken: String?) {
        let data: Data, response: URLResponse
        do {
            (data, response) = try await urlSession.data(for: request)
        } catch {
            try Task.checkCancellation()
            return (.retryable(.transport(error), retryAfter: nil), nil)
        }
        guard let http = response as? HTTPURLResponse else {
            return (.failure(.malformedResponse("not an HTTP response")), nil)
        }
        let outcome = Self.classify(status: http.statusCode, body: data, sessionID: sessionID,
                                    retryAfter: http.value(forHTTPHeaderField: "Retry-After"))
        if case let .success(data, status, _) = outcome,
           let stale = http.value(forHTTPHeaderField: "TopChrome-Stale-Reports").flatMap({ Int($0) }) {
            return (.success(data, status: status, staleReports: stale), nil)
        }
        let refused = Self.refusesTokenAsInvalid(status: http.statusCode, challenge: http.value(forHTTPHeaderField: "WWW-Authenticate"))
            ? Self.bearerToken(of: request) : nil
        return (outcome, refused)
    }

    /// RFC 6750 §3.1: a token expired, revoked or otherwise invalid; another may pass.
    static func refusesTokenAsInvalid(status: Int, challenge: String?) -> Bool {
        status == 401 && challenge?.contains("invalid_token") == true
    }

    static func bearerToken(of request: URLRequest) -> String? {
        guard let value = request.value(forHTTPHeaderField: "Authorization"), value.hasPrefix("Bearer ") else { return nil }
        return String(value.dropFirst("Bearer ".count))
    }

    static func classify(status: Int, body: Data, sessionID: String?, retryAfter: String?) -> Outcome {
        switch status {
        case 200..<300:
            return .success(body, status: status)
        case 404 where sessionID != nil:
            return .failure(.sessionGone(id: sessionID ?? ""))
        case 429, 503:
            return .retryable(.unavailable(problem(status: status, body: body)), retryAfter: retryAfter.flatMap(seconds(retryAfter:)))
        default:
            return .failure(.rejected(problem(status: status, body: body)))
        }
    }

    /// Sends `request` until it succeeds, fails for good, or the retries run out.
    func send(_ request: URLRequest, sessionID: String?) async throws -> Data {
        try await retrying { try await self.attempt(request, sessionID: sessionID) }
    }

    /// `attempt` until it succeeds, fails for good, or the retries run out.
    func retrying(_ attempt: @Sendable () async throws -> Outcome) async throws -> Data {
        var retry = 0
        while true {
            switch try await attempt() {
            case let .success(data, _, _):
                return data
            case let .failure(error):
                throw error
            case let .retryable(error, retryAfter):
                guard retry + 1 < configuration.retry.maximumAttempts else { throw error }
                try await configuration.retry.pause(retry: retry, retryAfter: retryAfter)
                retry += 1
            }
        }
    }

    static func decodeState(_ data: Data) throws -> SessionState {
        do {
            return try JSONDecoder().decode(SessionState.self, from: data)
        } catch {
            throw TopChromeError.malformedResponse("not a session state: \(String(decoding: data.prefix(200), as: UTF8.self))")
        }
    }

    /// The problem+json body, or one made from the status when the body is
    /// not one (a proxy's HTML page, say).
    static func problem(status: Int, body: Data) -> Problem {
        if let problem = try? JSONDecoder().decode(Problem.self, from: body) { return problem }
        return Problem(status: status, detail: body.isEmpty ? nil : String(decoding: body.prefix(200), as: UTF8.self))
    }

    /// `Retry-After` as delta-seconds or as an HTTP date (RFC 9110 §10.2.3).
    static func seconds(retryAfter value: String) -> Double? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Int(trimmed), seconds >= 0 { return Double(seconds) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.date(from: trimmed).map { max(0, $0.timeIntervalSinceNow) }
    }
}

/// Request bodies, written by `JSONEncoder`, which refuses a NaN or an
/// infinity: such a value never leaves the app.
struct InsetBody: Encodable {
    var inset: Double
}

struct NewSessionBody: Encodable, Equatable {
    var inset: Double?
    var behavior: RevealBehavior.RawValue?
    var collapsibleHeight: Double?
    var snap: Bool?
}

extension ChromeService {
    static func encode(_ value: some Encodable) throws -> Data {
        do {
            return try JSONEncoder().encode(value)
        } catch {
            throw TopChromeError.invalidValue("\(value) is not finite")
        }
    }
}
