import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The TopChrome service as an app sees it: sessions to create or attach
/// to, each with its own ordered queue of changes and its event stream.
public final class TopChromeClient: Sendable {
    /// What the client does when the network or the service falters.
    public struct Configuration: Sendable {
        /// Retries of requests and reconnections of event streams.
        public var retry = RetryPolicy()
        /// Seconds a request may take before it counts as a network error.
        public var requestTimeout: Double = 30
        /// Seconds an event stream may stay silent before it is reconnected.
        /// The service sends a heartbeat every 15 s by default, so several
        /// missed heartbeats mean the connection is dead.
        public var streamIdleTimeout: Double = 50

        public init() {}
    }

    public let baseURL: URL
    public let configuration: Configuration
    let bearerToken: String?
    let urlSession: URLSession

    public init(baseURL: URL, bearerToken: String?, configuration: Configuration = Configuration()) {
        self.baseURL = baseURL
        self.bearerToken = bearerToken
        self.configuration = configuration
        let sessionConfiguration = URLSessionConfiguration.ephemeral
        sessionConfiguration.timeoutIntervalForRequest = configuration.requestTimeout
        urlSession = URLSession(configuration: sessionConfiguration)
    }

    deinit { urlSession.finishTasksAndInvalidate() }

    /// Creates a session on the service. A 503 when the service is full is
    /// retried; if a retry follows a request that did arrive, the extra
    /// session is never used and expires with the service's session TTL.
    public func createSession(inset: Double? = nil) async throws -> ChromeSession {
        let body = try inset.map { try JSONEncoder().encode(["inset": $0]) }
        let data = try await send(request("POST", "v1/sessions", body: body), sessionID: nil)
        return ChromeSession(id: try Self.decodeState(data).id, client: self)
    }

    /// A session that already exists, by id: nothing is sent until it is used.
    public func session(id: String) -> ChromeSession {
        ChromeSession(id: id, client: self)
    }

    // MARK: Requests

    func request(_ method: String, _ path: String, body: Data? = nil) -> URLRequest {
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
        case success(Data, status: Int)
        case retryable(TopChromeError, retryAfter: Double?)
        case failure(TopChromeError)
    }

    /// One attempt, classified: network errors, 503 and 429 may pass if
    /// tried again; other refusals would only be refused again.
    func attempt(_ request: URLRequest, sessionID: String?) async throws -> Outcome {
        let data: Data, response: URLResponse
        do {
            (data, response) = try await urlSession.data(for: request)
        } catch {
            try Task.checkCancellation()
            return .retryable(.transport(error.localizedDescription), retryAfter: nil)
        }
        guard let http = response as? HTTPURLResponse else {
            return .failure(.malformedResponse("not an HTTP response"))
        }
        return Self.classify(status: http.statusCode, body: data, sessionID: sessionID,
                             retryAfter: http.value(forHTTPHeaderField: "Retry-After"))
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
        var retry = 0
        while true {
            switch try await attempt(request, sessionID: sessionID) {
            case let .success(data, _):
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

    static func decodeState(_ data: Data) throws -> ChromeState {
        do {
            return try JSONDecoder().decode(ChromeState.self, from: data)
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
