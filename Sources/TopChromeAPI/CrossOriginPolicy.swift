import MicroHTTPD

/// Which web pages on other origins may call the API from a browser (CORS,
/// in the Fetch standard), and the headers that tell the browser so.
///
/// Only the origins an operator named get the headers: a browser then lets
/// that page read the answers, and no other. Credentials mode stays off (no
/// `Access-Control-Allow-Credentials`): the API uses no cookies, and a bearer
/// token is a header the page sets itself, which a preflight allows.
public struct CrossOriginPolicy: Sendable {
    /// As browsers serialize them in `Origin`, compared byte for byte.
    private let origins: Set<String>

    /// `origins` as ``ServiceConfiguration`` checked them; nil when there are
    /// none, so a service without CORS does nothing for it per request.
    public init?(origins: [String]) {
        guard !origins.isEmpty else { return nil }
        self.origins = Set(origins)
    }

    /// Every method the API answers, whatever the path: a preflight for the
    /// wrong one then lets the request through to a 405 the page can read.
    static let allowedMethods = "GET, HEAD, POST, PUT, DELETE"
    /// What the API reads besides the safelisted headers: JSON bodies,
    /// the bearer token, conditional requests, long-polls, a stream's
    /// resumption, and the ids that tie a request to the server's log.
    static let allowedHeaders = "Content-Type, Authorization, If-Match, If-None-Match, Prefer, Last-Event-ID, "
        + "X-Request-Id, traceparent"
    /// Headers a page must read that browsers hide unless listed: the
    /// version (`ETag`), a new session's address, when to retry, what a 405
    /// allows, what a 401 wants, the creation limit's state, and the
    /// request's id as the log has it.
    static let exposedHeaders = "ETag, Location, Retry-After, Allow, WWW-Authenticate, RateLimit, RateLimit-Policy, "
        + "X-Request-Id"
    /// Chromium's ceiling. A cached preflight only allows a request: the
    /// answer still needs its own `Access-Control-Allow-Origin`, so an origin
    /// taken off the list loses access at once.
    static let maxAgeSeconds = 7200

    static let forbiddenPreflight = Problem(
        status: 403, detail: "This origin may not call the API from a browser; the server names the origins it allows with --cors-origin.")

    /// A WebSocket opened from a page elsewhere: browsers let any page
    /// open one, and leave the check to the server.
    static let forbiddenSocket = Problem(
        status: 403, detail: "This origin may not open the socket from a browser; the server names the origins it allows with --cors-origin.")

    func allows(_ origin: String) -> Bool { origins.contains(origin) }

    /// `Origin` if it is one of ours.
    private func allowedOrigin(of request: MicroHTTPDRequest) -> String? {
        guard let origin = request.headers.combined("Origin"), origins.contains(origin) else { return nil }
        return origin
    }

    /// The answer to a preflight (`OPTIONS` with `Origin` and
    /// `Access-Control-Request-Method`), or nil for any other request. A
    /// preflight never carries the bearer token, so none is asked for. One
    /// from an origin not allowed gets 403 without CORS headers: the browser
    /// stops there, as it would on a 204 without them, and its developer
    /// tools show why.
    func preflightAnswer(to request: MicroHTTPDRequest) -> MicroHTTPDResponse? {
        guard request.method == "OPTIONS", request.headers.contains("Origin"),
              request.headers.contains("Access-Control-Request-Method") else { return nil }
        guard let origin = allowedOrigin(of: request) else {
            var refusal = Self.forbiddenPreflight.response
            refusal.headers.add(name: "Vary", value: "Origin")
            return .complete(refusal)
        }
        return MicroHTTPDResponse(status: 204, headers: HTTPHeaders([
            ("Access-Control-Allow-Origin", origin),
            ("Access-Control-Allow-Methods", Self.allowedMethods),
            ("Access-Control-Allow-Headers", Self.allowedHeaders),
            ("Access-Control-Max-Age", String(Self.maxAgeSeconds)),
            ("Vary", "Origin"),
        ]))
    }

    /// Adds to an answer what lets a page from an allowed origin read it,
    /// problems and event streams included. Every answer says `Vary: Origin`,
    /// so a cache never hands one made for one origin to another.
    func addHeaders(to response: inout MicroHTTPDResponse, for request: MicroHTTPDRequest) {
        var fields = HTTPHeaders()
        if let origin = allowedOrigin(of: request) {
            fields.add(name: "Access-Control-Allow-Origin", value: origin)
            fields.add(name: "Access-Control-Expose-Headers", value: Self.exposedHeaders)
        }
        fields.add(name: "Vary", value: "Origin")
        // An answer that comes later carries them too, whichever it is.
        response.addHeaders(fields)
    }
}
