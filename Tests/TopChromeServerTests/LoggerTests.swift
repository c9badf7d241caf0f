import Foundation
import MicroHTTPD
import StrictJSON
import Testing
import TopChromeCore
@testable import TopChromeAPI
@testable import TopChromeServer
import TopChromeTesting

/// A wall clock the test sets.
final class StepClock: @unchecked Sendable {
    private let lock = NSLock()
    private var now = timespec()

    func set(_ seconds: Int, milliseconds: Int = 0) {
        lock.withLock { now = timespec(tv_sec: seconds, tv_nsec: milliseconds * 1_000_000) }
    }

    var read: @Sendable () -> timespec {
        { [self] in lock.withLock { now } }
    }
}

/// A logger writing into two temporary files instead of stdout and stderr.
/// The logger must not outlive it: the files close with it.
final class CapturedLog {
    let logger: Logger
    private let outputPath = FileManager.default.temporaryDirectory.appendingPathComponent("log-out-\(UUID().uuidString)").path
    private let errorsPath = FileManager.default.temporaryDirectory.appendingPathComponent("log-err-\(UUID().uuidString)").path
    private let output: Int32
    private let errors: Int32

    init(_ format: LogFormat, level: LogLevel = .info, clock: StepClock? = nil) {
        output = open(outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        errors = open(errorsPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        logger = Logger(format: format, level: level, output: output, errors: errors,
                        clock: clock?.read ?? Logger.wallClock)
    }

    deinit {
        // Lines still buffered are written now, not by the logger's own
        // deinit after the files have closed (into whatever reused their numbers).
        logger.flush()
        close(output)
        close(errors)
        unlink(outputPath)
        unlink(errorsPath)
    }

    /// What reached stdout so far, line by line.
    var outputLines: [String] { Self.lines(outputPath) }
    var errorLines: [String] { Self.lines(errorsPath) }

    private static func lines(_ path: String) -> [String] {
        // An empty file is not read through Foundation, which leaks a buffer
        // for it (a toolchain bug LeakSanitizer reports).
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        let text = size == 0 ? "" : (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
    }
}

@Suite struct LoggerTests {
    /// 2026-11-30T01:04:45Z, the example in docs/operations.md ("Logs").
    static let readmeSecond = 1_796_000_685

    func readmeExchange() throws -> HTTPExchange {
        let id = try #require(SessionID("3b6b1e62" + String(repeating: "0", count: 24)))
        return HTTPExchange(method: "POST", path: "/v1/sessions/\(id)/scroll", client: "127.0.0.1",
                            endpoint: ExchangeEndpoint(template: .scroll, session: id).rawValue,
                            status: 200, bodyBytes: 83, duration: .microseconds(61), isStream: false,
                            identity: RequestIdentity(traceID: (0x9c1d_07a2_e45b_3f6a, 7), madeID: (0x9c1d_07a2_e45b_3f6a, 7)))
    }

    /// A client's own ids are written as they came, in either format.
    @Test(arguments: LogFormat.allCases)
    func givenIdsAreWrittenAsTheyCame(_ format: LogFormat) throws {
        let log = CapturedLog(format, clock: StepClock())
        let identity = RequestIdentity(traceID: (0x4bf9_2f35_77b3_4da6, 0xa3ce_929d_0e0e_4736), madeID: (1, 2),
                                       givenRequestID: "app-42.7:retry/1")
        ExchangeRecorder(metrics: ServiceMetrics(), logger: log.logger).completed(
            HTTPExchange(method: "GET", path: "/healthz", endpoint: nil, status: 200, bodyBytes: 0, duration: .zero,
                         isStream: false, identity: identity))
        log.logger.flush()
        let line = try #require(log.outputLines.first)
        switch format {
        case .text: #expect(line.hasSuffix(" trace_id=4bf92f3577b34da6a3ce929d0e0e4736 request_id=app-42.7:retry/1"), "\(line)")
        case .json: #expect(line.hasSuffix(#","trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","request_id":"app-42.7:retry/1"}"#), "\(line)")
        }
    }

    /// The access line is what docs/operations.md ("Logs") shows, byte for
    /// byte, in both formats.
    @Test(arguments: LogFormat.allCases)
    func requestLineIsTheDocumentedOne(_ format: LogFormat) throws {
        let clock = StepClock()
        clock.set(Self.readmeSecond, milliseconds: 123)
        let log = CapturedLog(format, clock: clock)
        ExchangeRecorder(metrics: ServiceMetrics(), logger: log.logger).completed(try readmeExchange())
        log.logger.flush()
        let line = try #require(log.outputLines.first)
        #expect(log.outputLines.count == 1)
        let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let page = try String(contentsOf: packageRoot.appendingPathComponent("docs/operations.md"), encoding: .utf8)
        #expect(page.split(separator: "\n").contains { $0 == line }, "docs/operations.md shows: \(line)")
    }

    /// Access lines whose start (method and route) was made once are the
    /// lines the fields would make one by one, for every route, usual and
    /// unusual methods, odd statuses, sessions or none, in both formats.
    @Test(arguments: LogFormat.allCases)
    func madeStartsWriteWhatFieldsWould(_ format: LogFormat) throws {
        let clock = StepClock()
        clock.set(Self.readmeSecond, milliseconds: 7)
        let made = CapturedLog(format, clock: clock), reference = CapturedLog(format, clock: clock)
        let recorder = ExchangeRecorder(metrics: ServiceMetrics(), logger: made.logger)
        let methods = ["GET", "POST", "PUT", "DELETE", "HEAD", "PATCH", "OPTIONS", "GETS", "PUTS", "G T", #"P"T\"#]
        // The longest numbers too: the fields after the start are written with room made once.
        let statuses = [200, 304, 404, 99, 1000, -1, Int.min]
        let session = try #require(SessionID("3b6b1e62" + String(repeating: "0", count: 24)))
        var count = 0
        for template in Route.Template.allCases {
            for (index, method) in methods.enumerated() {
                let status = statuses[(index + template.rawValue) % statuses.count]
                let endpoint = ExchangeEndpoint(template: template, session: index.isMultiple(of: 2) ? session : nil)
                let duration = index == 1 ? Duration.seconds(86_400 * 365 * 100) : .microseconds(61 * index)
                let bodyBytes = index == 2 ? Int.max : 83 * index
                let client = index.isMultiple(of: 3) ? "2001:db8::7" : nil
                recorder.completed(HTTPExchange(method: method, path: "/x y", client: client, endpoint: endpoint.rawValue,
                                                status: status, bodyBytes: bodyBytes, duration: duration, isStream: false))
                reference.logger.log(.info, "request") { line in
                    line.field("method", method)
                    line.field("route", verbatim: template.name)
                    line.field("status", status)
                    line.field("duration_ms", milliseconds: duration)
                    line.field("bytes", bodyBytes)
                    if let prefix = endpoint.sessionPrefix {
                        line.field("session", hexDigits: prefix)
                    } else {
                        line.field("session", "-")
                    }
                    if let client { line.field("client", client) }
                    if template == .unmatched { line.field("path", "/x%20y") }
                }
                count += 1
            }
        }
        made.logger.flush()
        reference.logger.flush()
        #expect(made.outputLines.count == count)
        #expect(reference.outputLines.count == count)
        for (line, expected) in zip(made.outputLines, reference.outputLines) {
            #expect(line == expected)
        }
    }

    /// The date and time up to the second are kept while the second lasts;
    /// a new second (a new day, year, leap day, or the clock stepped back)
    /// gets its own.
    @Test(arguments: LogFormat.allCases)
    func timestampsFollowTheClockAcrossSeconds(_ format: LogFormat) throws {
        let clock = StepClock()
        let log = CapturedLog(format, clock: clock)
        let newYearsEve = 1_798_761_599  // 2026-12-31T23:59:59Z
        let leapDayEve = 1_835_395_199  // 2028-02-28T23:59:59Z
        let steps: [(Int, Int, String)] = [
            (newYearsEve, 0, "2026-12-31T23:59:59.000Z"),
            (newYearsEve, 998, "2026-12-31T23:59:59.998Z"),
            (newYearsEve, 999, "2026-12-31T23:59:59.999Z"),
            (newYearsEve + 1, 0, "2027-01-01T00:00:00.000Z"),
            (newYearsEve + 1, 7, "2027-01-01T00:00:00.007Z"),
            (newYearsEve + 2, 70, "2027-01-01T00:00:01.070Z"),
            (newYearsEve, 500, "2026-12-31T23:59:59.500Z"),
            (leapDayEve, 999, "2028-02-28T23:59:59.999Z"),
            (leapDayEve + 1, 0, "2028-02-29T00:00:00.000Z"),
            (leapDayEve + 1 + 86_400, 1, "2028-03-01T00:00:00.001Z"),
        ]
        for (second, milliseconds, _) in steps {
            clock.set(second, milliseconds: milliseconds)
            log.logger.log(.info, "tick")
        }
        log.logger.flush()
        let times = try log.outputLines.map { line in
            switch format {
            case .text: String(line.prefix { $0 != " " })
            case .json: try #require(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])["time"] as? String ?? ""
            }
        }
        #expect(times == steps.map(\.2))
    }

    /// Durations are rounded to the microsecond the same way whether they fit
    /// in 64 bits of attoseconds (about 9.2 s) or not.
    @Test func durationsRoundToTheMicrosecondAtAnyLength() throws {
        let log = CapturedLog(.text)
        let cases: [(Duration, String)] = [
            (.zero, "0.000"), (.nanoseconds(499), "0.000"), (.nanoseconds(500), "0.001"),
            (.microseconds(61), "0.061"), (.milliseconds(1234) + .nanoseconds(5600), "1234.006"),
            (.seconds(9) + .milliseconds(223), "9223.000"), (.seconds(9) + .milliseconds(224), "9224.000"),
            (.seconds(86_400) + .nanoseconds(1500), "86400000.002"),
        ]
        for (duration, _) in cases {
            log.logger.log(.info, "took") { $0.field("d", milliseconds: duration) }
        }
        log.logger.flush()
        #expect(log.outputLines.map { String($0.split(separator: "=").last ?? "") } == cases.map(\.1))
    }

    /// Short pieces are copied a word at a time, the last word overlapping:
    /// every length up to past two words comes out whole, in both formats.
    @Test(arguments: LogFormat.allCases)
    func valuesOfEveryShortLengthArriveWhole(_ format: LogFormat) throws {
        let log = CapturedLog(format)
        let values = (0...20).map { length in String((0..<length).map { Character(UnicodeScalar(UInt8(97 + $0))) }) }
        for value in values {
            log.logger.log(.info, "piece") { $0.field("v", value) }
        }
        log.logger.flush()
        let expected = values.map { format == .json ? #""v":"\#($0)"}"# : "v=\($0)" }
        #expect(log.outputLines.count == values.count)
        for (line, ending) in zip(log.outputLines, expected) {
            #expect(line.hasSuffix(ending), "\(line)")
        }
    }

    /// The short id is the one the API read from the path when it routed the
    /// request; the recorder does not read the path again.
    @Test func shortSessionIdComesFromTheRoute() throws {
        let service = TopChromeService(configuration: ServiceConfiguration())
        let id = try service.backend.memoryStore!.create(inset: 0).id
        let other = SessionID.random()
        let clock = StepClock()
        let log = CapturedLog(.text, clock: clock)
        let recorder = ExchangeRecorder(metrics: ServiceMetrics(), logger: log.logger)
        @discardableResult
        func record(_ method: String, _ path: String, reportedPath: String) -> MicroHTTPDResponse {
            let response = service.api.respond(to: MicroHTTPDRequest(method: method, path: path,
                                                              headers: HTTPHeaders([("Host", "x")])))
            recorder.completed(HTTPExchange(method: method, path: reportedPath, endpoint: response.endpoint,
                                            status: response.status, bodyBytes: response.body.count,
                                            duration: .zero, isStream: false))
            return response
        }
        // The exchange's path is left blank: only the API's word can name the session.
        record("GET", "/v1/sessions/\(id)", reportedPath: "")
        record("POST", "/v1/sessions/\(other)/disappear", reportedPath: "")
        record("GET", "/v1/sessions/not-an-id", reportedPath: "")
        // A new session's id is in no path: the API names it from the session it made.
        let created = record("POST", "/v1/sessions", reportedPath: "").headers["Location"] ?? ""
        #expect(created.hasPrefix("/v1/sessions/"))
        // Refused before the API saw it (the server stopping): the path is all there is.
        recorder.completed(HTTPExchange(method: "GET", path: "/v1/sessions/\(id)", endpoint: nil, status: 503,
                                        bodyBytes: 0, duration: .zero, isStream: false))
        log.logger.flush()
        let fields = log.outputLines.map { line in
            line.split(separator: " ").filter { $0.hasPrefix("route=") || $0.hasPrefix("status=") || $0.hasPrefix("session=") }
                .joined(separator: " ")
        }
        #expect(fields == [
            "route=/v1/sessions/{id} status=200 session=\(id.description.prefix(8))",
            "route=/v1/sessions/{id}/disappear status=404 session=\(other.description.prefix(8))",
            "route=/v1/sessions/{id} status=404 session=-",
            "route=/v1/sessions status=201 session=\(created.dropFirst("/v1/sessions/".count).prefix(8))",
            "route=/v1/sessions/{id} status=503 session=\(id.description.prefix(8))",
        ])
    }

    /// A short id is written as eight lowercase hex digits, leading zeros
    /// and every digit included.
    @Test func shortIdsAreEightLowercaseHexDigits() {
        let values: [UInt32] = [0, 1, 9, 10, 15, 0x0123_4567, 0x89AB_CDEF, 0xF0E1_D2C3, 0x3B6B_1E62, 0xFFFF_FFFF]
        var bytes = LogBytes(capacity: 4)  // grows on the first append
        for value in values {
            bytes.removeAll()
            bytes.appendEightHexDigits(value)
            let expected = String(repeating: "0", count: 8 - String(value, radix: 16).count) + String(value, radix: 16)
            #expect(String(decoding: bytes.copied(), as: UTF8.self) == expected)
        }
    }

    /// The number the API hands the server holds the route and the id's
    /// first 32 bits, whatever their value, and nothing else passes for one.
    @Test func endpointKeepsTemplateAndSessionPrefix() {
        let prefixes: [UInt32] = [0, 1, 0x3b6b_1e62, 0x8000_0000, 0xFFFF_FFFF]
        for template in Route.Template.allCases {
            let bare = ExchangeEndpoint(template: template, session: nil)
            #expect(ExchangeEndpoint(rawValue: bare.rawValue) == bare)
            #expect(bare.rawValue == template.rawValue, "without an id it is the template's number")
            for prefix in prefixes {
                let endpoint = ExchangeEndpoint(template: template, session: SessionID(high: UInt64(prefix) << 32 | 0xABCD, low: 7))
                #expect(endpoint.sessionPrefix == prefix)
                #expect(ExchangeEndpoint(rawValue: endpoint.rawValue) == endpoint)
            }
        }
        #expect(ExchangeEndpoint(rawValue: Route.Template.allCases.count) == nil)
        #expect(ExchangeEndpoint(rawValue: 0x200) == nil)
        #expect(ExchangeEndpoint(rawValue: -1) == nil)
    }

    static let oddValues = [
        #"/v1/sessions/"quoted"/scroll"#, #"back\slash"#, "line\nbreak\r\n", "tab\there", "\u{01}\u{1F}\u{7F}",
        "café ünïcödé 😀", "", "with space", "</script>",
    ]

    /// JSON lines escape what JSON must and nothing else, as the API's own
    /// writer does, so every line still parses and reads back the same.
    @Test func jsonEscapesOddValuesAsTheAPIWriterDoes() throws {
        let log = CapturedLog(.json)
        for value in Self.oddValues {
            log.logger.log(.info, value, ["path": .string(value), value: .int(1)])
        }
        log.logger.flush()
        let lines = log.outputLines
        #expect(lines.count == Self.oddValues.count)
        for (line, value) in zip(lines, Self.oddValues) {
            let object = try #require(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(object["msg"] as? String == value)
            #expect(object["path"] as? String == value)
            #expect(object[value] as? Int == 1)
            var writer = JSONWriter()
            writer.string(value)
            #expect(line.contains(#","path":"# + String(decoding: writer.bytes, as: UTF8.self) + ","))
        }
    }

    /// In text, a value with a space is quoted so it stays one field; others are written as they are.
    @Test func textQuotesValuesWithSpaces() throws {
        let log = CapturedLog(.text)
        log.logger.log(.info, "snapshot failed", ["error": .string("disk full"), "path": .string("/tmp/x"),
                                                  "count": .int(-12), "took_ms": .milliseconds(1.25)])
        log.logger.flush()
        let line = try #require(log.outputLines.first)
        #expect(line.hasSuffix(#" info snapshot failed error="disk full" path=/tmp/x count=-12 took_ms=1.250"#))
    }

    /// Warnings go to stderr at once, after the lines buffered before them.
    @Test func warningsFlushWhatCameBefore() {
        let log = CapturedLog(.text)
        log.logger.log(.info, "first")
        #expect(log.errorLines.isEmpty)
        log.logger.log(.warn, "second")
        #expect(log.outputLines.count == 1 && log.outputLines[0].hasSuffix(" info first"))
        #expect(log.errorLines.count == 1 && log.errorLines[0].hasSuffix(" warn second"))
        log.logger.log(.debug, "not at info")
        log.logger.flush()
        #expect(log.outputLines.count == 1)
    }

    /// Many threads logging at once: every line arrives whole, none twice,
    /// through full buffers and the final flush alike.
    @Test func linesFromManyThreadsArriveWhole() throws {
        let log = CapturedLog(.json)
        let threads = 6, perThread = 3000
        let logger = log.logger
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for index in 0..<perThread {
                logger.log(.info, "request") { line in
                    line.field("thread", thread)
                    line.field("index", index)
                    line.field("route", "/v1/sessions/{id}/scroll")
                }
            }
        }
        log.logger.flush()
        let lines = log.outputLines
        #expect(lines.count == threads * perThread)
        var seen = Set<Int>()
        for line in lines {
            let object = try #require(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let key = (object["thread"] as? Int ?? -1) * perThread + (object["index"] as? Int ?? -1)
            #expect(seen.insert(key).inserted)
        }
        #expect(seen.count == threads * perThread)
    }
}
