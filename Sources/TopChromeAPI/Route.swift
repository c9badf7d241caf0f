import TopChromeCore

/// The resources of the API, read from a request path.
public enum Route: Equatable, Sendable {
    case sessions
    case session(SessionID?)
    case inset(SessionID?)
    case scroll(SessionID?)
    case disappear(SessionID?)
    case behavior(SessionID?)
    case events(SessionID?)
    /// The WebSocket channel: reports in, states out, on one connection.
    case socket(SessionID?)
    case health
    case readiness
    case openAPI
    case metrics
    case demo
    /// Minting an access token for one session.
    case tokens(SessionID?)
    /// The public keys minted tokens verify with.
    case jwks

    /// The paths without an id, each a resource of its own.
    static let fixedPaths: [(path: StaticString, route: Route)] = [
        ("/v1/sessions", .sessions), ("/healthz", .health), ("/readyz", .readiness),
        ("/openapi.yaml", .openAPI), ("/metrics", .metrics), ("/", .demo),
        ("/.well-known/jwks.json", .jwks),
    ]

    /// Methods this resource answers, for 405's `Allow`.
    var allowedMethods: [String] {
        switch self {
        case .sessions, .scroll, .disappear, .tokens: ["POST"]
        case .session: ["GET", "HEAD", "DELETE"]
        case .inset, .behavior: ["PUT"]
        case .events, .health, .readiness, .openAPI, .metrics, .demo, .jwks: ["GET", "HEAD"]
        case .socket: ["GET"]
        }
    }

    /// Whether this resource answers `method`; asked on every request, so it builds no list.
    func allows(_ method: String) -> Bool {
        switch self {
        case .sessions, .scroll, .disappear, .tokens: method == "POST"
        case .session: method == "GET" || method == "HEAD" || method == "DELETE"
        case .inset, .behavior: method == "PUT"
        case .events, .health, .readiness, .openAPI, .metrics, .demo, .jwks: method == "GET" || method == "HEAD"
        case .socket: method == "GET"
        }
    }

    /// The path with the id left out: what metrics and logs name a request by.
    /// The API hands it to the server with each response (``ExchangeEndpoint``).
    public enum Template: Int, CaseIterable, Sendable {
        case sessions, session, inset, scroll, disappear, events, health, readiness, openAPI, metrics, demo, unmatched
        case behavior
        case socket
        case tokens, jwks

        public var name: StaticString {
            switch self {
            case .sessions: "/v1/sessions"
            case .session: "/v1/sessions/{id}"
            case .inset: "/v1/sessions/{id}/inset"
            case .scroll: "/v1/sessions/{id}/scroll"
            case .disappear: "/v1/sessions/{id}/disappear"
            case .events: "/v1/sessions/{id}/events"
            case .health: "/healthz"
            case .readiness: "/readyz"
            case .openAPI: "/openapi.yaml"
            case .metrics: "/metrics"
            case .demo: "/"
            case .unmatched: "unmatched"
            case .behavior: "/v1/sessions/{id}/behavior"
            case .socket: "/v1/sessions/{id}/socket"
            case .tokens: "/v1/sessions/{id}/tokens"
            case .jwks: "/.well-known/jwks.json"
            }
        }
    }

    var template: Template {
        switch self {
        case .sessions: .sessions
        case .session: .session
        case .inset: .inset
        case .scroll: .scroll
        case .disappear: .disappear
        case .events: .events
        case .health: .health
        case .readiness: .readiness
        case .openAPI: .openAPI
        case .metrics: .metrics
        case .demo: .demo
        case .behavior: .behavior
        case .socket: .socket
        case .tokens: .tokens
        case .jwks: .jwks
        }
    }

    var sessionID: SessionID? {
        switch self {
        case let .session(id), let .inset(id), let .scroll(id), let .disappear(id), let .events(id), let .behavior(id),
             let .tokens(id), let .socket(id): id
        default: nil
        }
    }
}
