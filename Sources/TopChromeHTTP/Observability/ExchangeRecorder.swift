import MicroHTTPD

/// Turns every finished exchange into metrics and an access-log line.
final class ExchangeRecorder: HTTPExchangeObserver {
    let metrics: ServiceMetrics
    let logger: Logger

    init(metrics: ServiceMetrics, logger: Logger) {
        self.metrics = metrics
        self.logger = logger
    }

    func completed(_ exchange: HTTPExchange) {
        // The API names the route it answered, so metrics never read the path;
        // only requests refused before reaching it (the server stopping) and
        // the access log (for its short session id) do.
        let template = exchange.endpoint.flatMap(Route.Template.init(rawValue:))
            ?? Route(path: exchange.path)?.template ?? .unmatched
        metrics.record(exchange, template: template)
        guard logger.isEnabled(.info) else { return }
        let route = Route(path: exchange.path)
        let milliseconds = Double(exchange.duration.components.seconds) * 1000
            + Double(exchange.duration.components.attoseconds) / 1e15
        // Eight hex digits tell sessions apart in a log without handing out the id.
        let session = route?.sessionID.map { String($0.description.prefix(8)) } ?? "-"
        logger.log(.info, "request", [
            "method": .string(exchange.method), "route": .string(template.name),
            "status": .int(exchange.status), "duration_ms": .milliseconds(milliseconds),
            "bytes": .int(exchange.bodyBytes), "session": .string(session),
        ])
    }
}
