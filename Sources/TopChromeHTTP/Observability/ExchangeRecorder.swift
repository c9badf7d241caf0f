import MicroHTTPD
import TopChromeCore

/// Turns every finished exchange into metrics and an access-log line.
final class ExchangeRecorder: HTTPExchangeObserver {
    let metrics: ServiceMetrics
    let logger: Logger

    init(metrics: ServiceMetrics, logger: Logger) {
        self.metrics = metrics
        self.logger = logger
    }

    func completed(_ exchange: HTTPExchange) {
        // The API says what it answered, so neither metrics nor the log read
        // the path again; only requests refused before reaching it (the
        // server stopping) are routed here.
        let endpoint = exchange.endpoint.flatMap(ExchangeEndpoint.init(rawValue:))
            ?? ExchangeEndpoint(Route(path: exchange.path))
        metrics.record(exchange, template: endpoint.template)
        logger.log(.info, "request") { line in
            line.field("method", exchange.method)
            line.field("route", verbatim: endpoint.template.name)
            line.field("status", exchange.status)
            line.field("duration_ms", milliseconds: exchange.duration)
            line.field("bytes", exchange.bodyBytes)
            // Eight hex digits tell sessions apart in a log without handing out the id.
            if let session = endpoint.sessionPrefix {
                line.field("session", hexDigits: session)
            } else {
                line.field("session", "-")
            }
        }
    }
}

/// What the API tells the recorder about a request it answered, in the one
/// number the server carries from the response to its observer
/// (``HTTPResponse/endpoint``): the route's template, and the first 32 bits
/// of the session id the path named, both read once by the API's routing.
struct ExchangeEndpoint: Equatable {
    var template: Route.Template
    /// The id's first eight hex digits, as a number; nil when the path named no well-formed id.
    var sessionPrefix: UInt32?

    init(template: Route.Template, session: SessionID?) {
        self.template = template
        sessionPrefix = session.map { UInt32(truncatingIfNeeded: $0.high >> 32) }
    }

    init(_ route: Route?) {
        self.init(template: route?.template ?? .unmatched, session: route?.sessionID)
    }

    private static let templateBits: UInt64 = 0xFF
    private static let hasSessionBit: UInt64 = 0x100

    init?(rawValue: Int) {
        let bits = UInt64(bitPattern: Int64(rawValue))
        guard bits & 0xFFFF_FFFF & ~(Self.templateBits | Self.hasSessionBit) == 0,
              let template = Route.Template(rawValue: Int(bits & Self.templateBits)) else { return nil }
        self.template = template
        sessionPrefix = bits & Self.hasSessionBit != 0 ? UInt32(truncatingIfNeeded: bits >> 32) : nil
    }

    var rawValue: Int {
        var bits = UInt64(template.rawValue)
        if let sessionPrefix { bits |= Self.hasSessionBit | UInt64(sessionPrefix) << 32 }
        return Int(Int64(bitPattern: bits))
    }
}
