import Locking

/// Why the server turned a connection or a request away before the
/// application saw it. Each is counted, so an operator can tell an attack
/// (one address over its cap, heads that never finish) from a server too
/// small for its load (the connection cap, the descriptor budget).
public enum ConnectionRefusal: Int, Sendable, CaseIterable {
    /// The client's address already holds its maximum of connections.
    case perAddressLimit
    /// The server holds `maxConnections` connections.
    case connectionLimit
    /// The server holds as many connections as its descriptors allow.
    case descriptorBudget
    /// A request's head and body did not arrive within the request timeout (408).
    case requestTimeout
    /// libmicrohttpd answered a malformed request itself: 400,
    case badRequest
    /// 413 (a body length it cannot hold),
    case contentTooLarge
    /// 414 (a request line longer than the connection's memory),
    case uriTooLong
    /// 431 (header fields longer than the connection's memory),
    case headerFieldsTooLarge
    /// or another status.
    case otherMalformed

    /// The name metrics and logs give it.
    public var label: String {
        switch self {
        case .perAddressLimit: "per_address_limit"
        case .connectionLimit: "connection_limit"
        case .descriptorBudget: "descriptor_budget"
        case .requestTimeout: "request_timeout"
        case .badRequest: "bad_request"
        case .contentTooLarge: "content_too_large"
        case .uriTooLong: "uri_too_long"
        case .headerFieldsTooLarge: "header_fields_too_large"
        case .otherMalformed: "other_malformed"
        }
    }

    /// What libmicrohttpd's own answer with `status` counts as.
    init(libraryAnswer status: UInt32) {
        switch status {
        case 400: self = .badRequest
        case 413: self = .contentTooLarge
        case 414: self = .uriTooLong
        case 431: self = .headerFieldsTooLarge
        default: self = .otherMalformed
        }
    }
}

/// The server's connections as metrics show them: how many are open, and
/// how many were refused, by reason. Counted once per connection or
/// refusal, never per request, so a lock costs nothing that matters.
public final class ConnectionCounts: @unchecked Sendable {
    private let lock = PthreadLock()
    private var refused = [Int](repeating: 0, count: ConnectionRefusal.allCases.count)
    private var open = 0

    public init() {}

    /// Connections open now.
    public var openConnections: Int { lock.withLock { open } }

    /// Refusals for `reason` since the server was made.
    public func refusals(_ reason: ConnectionRefusal) -> Int {
        lock.withLock { refused[reason.rawValue] }
    }

    /// Every reason's count, in `ConnectionRefusal.allCases` order.
    public var allRefusals: [Int] { lock.withLock { refused } }

    func count(_ reason: ConnectionRefusal) {
        lock.withLock { refused[reason.rawValue] += 1 }
    }

    func changeOpen(by delta: Int) {
        lock.withLock { open += delta }
    }
}
