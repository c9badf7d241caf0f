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
        let client = exchange.client, identity = exchange.identity
        // What was asked where nothing lives: a typo, a scanner, an old client.
        let path = endpoint.template == .unmatched ? Self.loggable(exchange.pathBytes) : nil
        if let index = Self.startIndex(endpoint.template, exchange.method) {
            logger.log(starts[index]) { Self.writeRest(of: &$0, status, duration, bodyBytes, endpoint, identity, client, path) }
        } else {
            let method = exchange.method
            logger.log(.info, "request") { line in
                Self.writeStart(of: &line, method: method, template: endpoint.template)
                Self.writeRest(of: &line, status, duration, bodyBytes, endpoint, identity, client, path)
            }
        }
    }

    /// The longest path a line keeps: enough to tell what was asked, not
    /// enough for one request to fill the log.
    static let pathLimit = 128

    /// A path as a log may hold it: bytes that are not visible ASCII, and
    /// quotes and backslashes, written as `%XX` (what a client sent stays
    /// readable and one field), cut at ``pathLimit`` with `...`.
    static func loggable(_ path: [UInt8]) -> String {
        var text: [UInt8] = []
        text.reserveCapacity(min(path.count, pathLimit) + 8)
        let hex = Array("0123456789ABCDEF".utf8)
        for byte in path {
            if text.count >= pathLimit {
                text += Array("...".utf8)
                break
            }
            if (0x21...0x7E).contains(byte), byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\") {
                text.append(byte)
            } else {
                text += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            }
        }
        return String(decoding: text, as: UTF8.self)
    }

    private static func writeStart(of line: inout LogLine, method: String, template: Route.Template) {
        line.field("method", method)
        line.field("route", verbatim: template.name)
    }

    /// The numbers and the short id: four short fields, room made once.
    @inline(__always)
    private static func writeRest(of line: inout LogLine, _ status: Int, _ duration: Duration, _ bodyBytes: Int,
                                  _ endpoint: ExchangeEndpoint, _ identity: RequestIdentity?, _ client: String?,
                                  _ path: String?) {
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
        // An address is digits, hex, dots and colons: nothing to quote or escape.
        if let client { line.field("client", client) }
        if let path { line.field("path", path) }
        // Which trace and request (what a client quotes from `X-Request-Id`);
        // last, so the fields before stay where readers look for them.
        if let identity {
            line.boundedFields(atMost: "trace_id".utf8.count + "request_id".utf8.count + 2 * BoundedFields.roomPerID) { fields in
                fields.idFields(identity)
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
