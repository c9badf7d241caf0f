import MicroHTTPD
import TopChromeAPI

/// Turns every finished exchange into metrics and an access-log line.
final class ExchangeRecorder: HTTPExchangeObserver {
    let metrics: ServiceMetrics
    let logger: Logger
    /// The access line's start (level, message, method and route) for each
    /// route and usual method, made once: most of a line is the same from
    /// request to request. Indexed by ``startIndex(_:_:)``; empty when the
    /// logger writes no access lines.
    private let starts: [LogLineStart]
    /// The methods that have a made start; others are written field by field.
    private static let usualMethods = ["GET", "POST", "PUT", "DELETE", "HEAD"]

    init(metrics: ServiceMetrics, logger: Logger) {
        self.metrics = metrics
        self.logger = logger
        guard logger.isEnabled(.info) else {
            starts = []
            return
        }
        starts = Route.Template.allCases.flatMap { template in
            Self.usualMethods.map { method in
                logger.lineStart(.info, "request") { Self.writeStart(of: &$0, method: method, template: template) }
            }
        }
    }

    func completed(_ exchange: HTTPExchange) {
        // The API says what it answered, so neither metrics nor the log read
        // the path again; only requests refused before reaching it (the
        // server stopping) are routed here.
        let endpoint = exchange.endpoint.flatMap(ExchangeEndpoint.init(rawValue:))
            ?? ExchangeEndpoint(path: exchange.path)
        metrics.record(exchange, template: endpoint.template)
        guard logger.isEnabled(.info) else { return }
        // The closures take the numbers, not the exchange: capturing it copies
        // it (a retain and a release of its method and path) on every line.
        let status = exchange.status, duration = exchange.duration, bodyBytes = exchange.bodyBytes
        if let index = Self.startIndex(endpoint.template, exchange.method) {
            logger.log(starts[index]) { Self.writeRest(of: &$0, status, duration, bodyBytes, endpoint) }
        } else {
            let method = exchange.method
            logger.log(.info, "request") { line in
                Self.writeStart(of: &line, method: method, template: endpoint.template)
                Self.writeRest(of: &line, status, duration, bodyBytes, endpoint)
            }
        }
    }

    private static func writeStart(of line: inout LogLine, method: String, template: Route.Template) {
        line.field("method", method)
        line.field("route", verbatim: template.name)
    }

    /// The numbers and the short id: four short fields, room made once.
    @inline(__always)
    private static func writeRest(of line: inout LogLine, _ status: Int, _ duration: Duration, _ bodyBytes: Int,
                                  _ endpoint: ExchangeEndpoint) {
        let names = "status".utf8.count + "duration_ms".utf8.count + "bytes".utf8.count + "session".utf8.count
        line.boundedFields(atMost: names + 4 * BoundedFields.roomPerField) { fields in
            fields.field("status", status: status)
            fields.field("duration_ms", milliseconds: duration)
            fields.field("bytes", bodyBytes)
            // Eight hex digits tell sessions apart in a log without handing out the id.
            if let session = endpoint.sessionPrefix {
                fields.field("session", hexDigits: session)
            } else {
                fields.field("session", verbatim: "-")
            }
        }
    }

    /// Where the start for `template` and `method` is in ``starts``, if it
    /// was made. The server hands over the usual methods as literals, which
    /// compare equal without reading their bytes.
    @inline(__always)
    private static func startIndex(_ template: Route.Template, _ method: String) -> Int? {
        let methodIndex: Int
        switch method.utf8.count {
        case 3 where method == "GET": methodIndex = 0
        case 4 where method == "POST": methodIndex = 1
        case 3 where method == "PUT": methodIndex = 2
        case 6 where method == "DELETE": methodIndex = 3
        case 4 where method == "HEAD": methodIndex = 4
        default: return nil
        }
        return template.rawValue * usualMethods.count + methodIndex
    }
}
