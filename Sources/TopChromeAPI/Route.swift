#if canImport(Glibc)
import Glibc
#endif
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
    case health
    case readiness
    case openAPI
    case metrics
    case demo

    /// The route for `path`, or nil if no resource lives there. A
    /// well-formed path with a malformed id still names a resource kind (so a
    /// wrong method gets 405); its id is nil and it is simply not found.
    init?(path: String) {
        // Byte-wise: this runs on every request.
        var path = path
        guard let route = path.withUTF8({ Route(bytes: $0) }) else { return nil }
        self = route
    }

    /// The route for a request's ``HTTPRequest/pathBytes``.
    init?(pathBytes: [UInt8]) {
        guard let route = pathBytes.withUnsafeBufferPointer({ Route(bytes: $0) }) else { return nil }
        self = route
    }

    private init?(bytes: UnsafeBufferPointer<UInt8>) {
        if let route = Route(sessionPath: bytes) {
            self = route
        } else if let fixed = Self.fixedPaths.first(where: { bytes.equals($0.path) }) {
            self = fixed.route
        } else {
            return nil
        }
    }

    private static let fixedPaths: [(path: StaticString, route: Route)] = [
        ("/v1/sessions", .sessions), ("/healthz", .health), ("/readyz", .readiness),
        ("/openapi.yaml", .openAPI), ("/metrics", .metrics), ("/", .demo),
    ]

    /// `/v1/sessions/{id}` and its sub-resources.
    private init?(sessionPath bytes: UnsafeBufferPointer<UInt8>) {
        let prefix: StaticString = "/v1/sessions/"
        let prefixCount = prefix.utf8CodeUnitCount
        guard bytes.count > prefixCount,
              memcmp(bytes.baseAddress!, prefix.utf8Start, prefixCount) == 0 else { return nil }
        let rest = UnsafeBufferPointer(rebasing: bytes[prefixCount...])
        let slash = memchr(rest.baseAddress!, Int32(UInt8(ascii: "/")), rest.count)
            .map { UnsafeRawPointer($0) - UnsafeRawPointer(rest.baseAddress!) } ?? rest.count
        guard slash > 0 else { return nil }
        let id = SessionID(utf8: UnsafeBufferPointer(rebasing: rest[..<slash]))
        if slash == rest.count {
            self = .session(id)
            return
        }
        let suffix = UnsafeBufferPointer(rebasing: rest[(slash + 1)...])
        if suffix.equals("scroll") {
            self = .scroll(id)
        } else if suffix.equals("inset") {
            self = .inset(id)
        } else if suffix.equals("disappear") {
            self = .disappear(id)
        } else if suffix.equals("events") {
            self = .events(id)
        } else if suffix.equals("behavior") {
            self = .behavior(id)
        } else {
            return nil
        }
    }

    /// Methods this resource answers, for 405's `Allow`.
    var allowedMethods: [String] {
        switch self {
        case .sessions, .scroll, .disappear: ["POST"]
        case .session: ["GET", "HEAD", "DELETE"]
        case .inset, .behavior: ["PUT"]
        case .events, .health, .readiness, .openAPI, .metrics, .demo: ["GET", "HEAD"]
        }
    }

    /// Whether this resource answers `method`; asked on every request, so it builds no list.
    func allows(_ method: String) -> Bool {
        switch self {
        case .sessions, .scroll, .disappear: method == "POST"
        case .session: method == "GET" || method == "HEAD" || method == "DELETE"
        case .inset, .behavior: method == "PUT"
        case .events, .health, .readiness, .openAPI, .metrics, .demo: method == "GET" || method == "HEAD"
        }
    }

    /// The path with the id left out: what metrics and logs name a request by.
    /// The API hands it to the server with each response (``ExchangeEndpoint``).
    public enum Template: Int, CaseIterable, Sendable {
        case sessions, session, inset, scroll, disappear, events, health, readiness, openAPI, metrics, demo, unmatched
        case behavior

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
        }
    }

    var sessionID: SessionID? {
        switch self {
        case let .session(id), let .inset(id), let .scroll(id), let .disappear(id), let .events(id), let .behavior(id): id
        default: nil
        }
    }
}

extension UnsafeBufferPointer<UInt8> {
    /// Whether these bytes are exactly `literal`'s.
    func equals(_ literal: StaticString) -> Bool {
        count == literal.utf8CodeUnitCount && (count == 0 || memcmp(baseAddress!, literal.utf8Start, count) == 0)
    }
}
