import Foundation
import Testing
import TopChromeTesting

/// Request ids (issue 32 §8): a well-formed `traceparent` and `X-Request-Id`
/// are taken from the request, made where absent or malformed, written on
/// the access-log line, and a client's `X-Request-Id` comes back on every
/// answer to it, problems and refusals included.
@Suite struct RequestIDLiveTests {
    typealias RunningServer = ProcessLifecycleTests.RunningServer
    static let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    static func isMadeID(_ text: String?) -> Bool {
        guard let text else { return false }
        return text.utf8.count == 32 && text.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
            && text != String(repeating: "0", count: 32)
    }

    /// The access-log lines of a server, each as its fields.
    func requestLines(of server: RunningServer, count: Int) -> [[String: String]] {
        var lines: [[String: String]] = []
        _ = eventually(within: 10) {
            lines = server.standardOutput.split(separator: "\n").filter { $0.contains(" info request ") }.map { line in
                Dictionary(line.split(separator: " ").compactMap { field in
                    let pair = field.split(separator: "=", maxSplits: 1)
                    return pair.count == 2 ? (String(pair[0]), String(pair[1])) : nil
                }, uniquingKeysWith: { first, _ in first })
            }
            return lines.count >= count
        }
        return lines
    }

    @Test func idsAreTakenOrMadeLoggedAndEchoed() throws {
        let server = try RunningServer(["--port", "0"])
        _ = try server.waitUntilListening()
        let client = try TestHTTPClient(port: server.port)

        // Neither sent: one id made per request, for both fields; not sent back.
        let first = try client.request("GET", "/healthz")
        try client.request("GET", "/healthz")
        #expect(first.header("X-Request-Id") == nil)
        // Both sent and well formed: both taken, the id echoed as sent.
        let both = try client.request("GET", "/healthz", headers: [("traceparent", Self.traceparent),
                                                                    ("X-Request-Id", "app-42.7:retry/1")])
        #expect(both.header("X-Request-Id") == "app-42.7:retry/1")
        // A problem answer carries it too; a trace alone keeps a made request id.
        let problem = try client.request("GET", "/v1/sessions/00000000000000000000000000000000",
                                         headers: [("X-Request-Id", "lost-session")])
        #expect(problem.status == 404)
        #expect(problem.header("X-Request-Id") == "lost-session")
        try client.request("GET", "/healthz", headers: [("Traceparent", Self.traceparent)])

        let lines = requestLines(of: server, count: 5)
        try #require(lines.count == 5)
        let made = try #require(lines[0]["request_id"])
        #expect(Self.isMadeID(made) && lines[0]["trace_id"] == made, "\(lines[0])")
        #expect(Self.isMadeID(lines[1]["request_id"]) && lines[1]["request_id"] != made, "unique per request")
        #expect(lines[2]["trace_id"] == "4bf92f3577b34da6a3ce929d0e0e4736" && lines[2]["request_id"] == "app-42.7:retry/1")
        #expect(lines[3]["status"] == "404" && lines[3]["request_id"] == "lost-session")
        #expect(lines[4]["trace_id"] == "4bf92f3577b34da6a3ce929d0e0e4736" && Self.isMadeID(lines[4]["request_id"]))
        server.signal(SIGTERM)
        #expect(server.waitForExit(within: 10) == 0)
    }

    /// What is malformed is not taken: an id is made in its place, and
    /// nothing the client wrote reaches the log or the answer.
    @Test func malformedIdsAreReplaced() throws {
        let malformed = [
            ("traceparent", "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),  // version 01
            ("traceparent", "00-00000000000000000000000000000000-00f067aa0ba902b7-01"),  // trace-id all zeros
            ("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"),  // parent-id all zeros
            ("traceparent", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"),  // upper case
            ("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01"),  // 31 digits
            ("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g"),  // flags not hex
            ("X-Request-Id", String(repeating: "a", count: 65)),  // too long
            ("X-Request-Id", "two words"),
            ("X-Request-Id", "quote\"d"),
            ("X-Request-Id", "ü"),
        ]
        let server = try RunningServer(["--port", "0"])
        _ = try server.waitUntilListening()
        let client = try TestHTTPClient(port: server.port)
        for (field, value) in malformed {
            let response = try client.request("GET", "/healthz", headers: [(field, value)])
            #expect(response.status == 200)
            #expect(response.header("X-Request-Id") == nil, "\(field): \(value)")
        }
        let lines = requestLines(of: server, count: malformed.count)
        try #require(lines.count == malformed.count)
        for (line, (field, value)) in zip(lines, malformed) {
            #expect(Self.isMadeID(line["request_id"]) && line["trace_id"] == line["request_id"], "\(field): \(value) gave \(line)")
        }
        #expect(!server.standardOutput.contains("4bf92f3577b34da6a3ce929d0e0e473"), "no malformed trace id is logged")
        server.signal(SIGTERM)
        #expect(server.waitForExit(within: 10) == 0)
    }

    /// Refused before the API sees the request (an ambiguous head), and still named.
    @Test func refusalsCarryTheIdToo() throws {
        let server = try LiveServer()
        let client = try server.client()
        try client.send(raw: Array("POST /v1/sessions HTTP/1.1\r\nHost: x\r\nX-Request-Id: framed\r\nContent-Length: 0\r\nContent-Length: 5\r\n\r\n".utf8))
        let refused = try client.readResponse()
        #expect(refused.status == 400)
        #expect(refused.header("X-Request-Id") == "framed")
    }

    /// The head's check stops at a refused field; an id sent after it still names the refusal.
    @Test func anIdAfterARefusedFieldComesBack() throws {
        let server = try LiveServer()
        let client = try server.client()
        try client.send(raw: Array("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Note: a\rb\r\nX-Request-Id: after-it\r\n\r\n".utf8))
        let refused = try client.readResponse()
        #expect(refused.status == 400)
        #expect(refused.header("X-Request-Id") == "after-it")
    }
}
