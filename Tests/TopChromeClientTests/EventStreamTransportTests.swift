import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import TopChromeClient

/// Both ways of reading an event stream, side by side in one process:
/// libcurl (Linux's) and URLSession (Apple's platforms').
@Suite(.timeLimit(.minutes(10))) struct EventStreamTransportTests {
    static var transports: [EventStreamTransport] {
        #if os(Linux)
        [.urlSession, .curl]
        #else
        [.urlSession]
        #endif
    }

    /// Each hands over the head as the service sent it, then the first state.
    @Test(arguments: transports) func eachTransportReadsAStream(_ transport: EventStreamTransport) async throws {
        let server = try TestServer()
        let session = try await server.client().createSession(inset: 59)
        let connection = EventStreamConnection(URLRequest(url: server.url.appendingPathComponent("v1/sessions/\(session.id)/events")),
                                               bufferLimit: 16, transport: transport)
        defer { connection.close() }
        var head: EventStreamPiece?
        var body = ""
        for try await piece in connection.pieces {
            switch piece {
            case .head: head = piece
            case let .body(bytes): body += String(decoding: bytes, as: UTF8.self)
            }
            if body.contains("\n\n") { break }
        }
        guard case let .head(status, _, contentType, heartbeat, _)? = head else {
            Issue.record("no head before the first event")
            return
        }
        #expect(status == 200)
        #expect(contentType?.hasPrefix("text/event-stream") == true)
        #expect(heartbeat != nil)
        #expect(body.contains("59"), "the first event is the session's state: \(body)")
    }

    /// `make test-client-urlsession` runs the client's suite on Apple's path
    /// by this variable; nothing else moves Linux off libcurl.
    @Test func onlyTheVariableTakesLinuxOffLibcurl() {
        #expect(EventStreamTransport.chosen(by: ["TOPCHROME_CLIENT_EVENT_STREAMS": "urlsession"]) == .urlSession)
        #if os(Linux)
        #expect(EventStreamTransport.chosen(by: [:]) == .curl)
        #expect(EventStreamTransport.chosen(by: ["TOPCHROME_CLIENT_EVENT_STREAMS": "curl"]) == .curl)
        #endif
    }
}
