import TopChromeCore

/// What the API tells the recorder about a request it answered, in the one
/// number the server carries from the response to its observer
/// (``MicroHTTPDResponse/endpoint``): the route's template, and the first 32 bits
/// of the session id the path named, both read once by the API's routing.
public struct ExchangeEndpoint: Equatable {
    public var template: Route.Template
    /// The id's first eight hex digits, as a number; nil when the path named no well-formed id.
    public var sessionPrefix: UInt32?

    init(template: Route.Template, session: SessionID?) {
        self.template = template
        sessionPrefix = session.map { UInt32(truncatingIfNeeded: $0.high >> 32) }
    }

    init(_ route: Route?) {
        self.init(template: route?.template ?? .unmatched, session: route?.sessionID)
    }

    /// For a request the API did not answer (refused while the server stops).
    public init(path: String) {
        self.init(Route(path: path))
    }

    private static let templateBits: UInt64 = 0xFF
    private static let hasSessionBit: UInt64 = 0x100

    public init?(rawValue: Int) {
        let bits = UInt64(bitPattern: Int64(rawValue))
        guard bits & 0xFFFF_FFFF & ~(Self.templateBits | Self.hasSessionBit) == 0,
              let template = Route.Template(rawValue: Int(bits & Self.templateBits)) else { return nil }
        self.template = template
        sessionPrefix = bits & Self.hasSessionBit != 0 ? UInt32(truncatingIfNeeded: bits >> 32) : nil
    }

    public var rawValue: Int {
        var bits = UInt64(template.rawValue)
        if let sessionPrefix { bits |= Self.hasSessionBit | UInt64(sessionPrefix) << 32 }
        return Int(Int64(bitPattern: bits))
    }
}
