import MicroHTTPD
import TopChromeAPI

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
            ?? ExchangeEndpoint(path: exchange.path)
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
