import Foundation
import TopChromeTesting

/// One Server-Sent Event as a client sees it.
struct ServerSentEvent: Equatable {
    var event: String?
    var id: String?
    var data: String?
    var comment: String?
    var retry: String?
}

/// Reads `GET /v1/sessions/{id}/events` over its own connection.
final class EventStreamClient {
    let connection: TestHTTPClient
    let head: ReceivedResponse
    private var text = ""
    private(set) var ended = false

    init(port: Int, sessionID: String, headers: [(String, String)] = []) throws {
        connection = try TestHTTPClient(port: port)
        try connection.send(raw: Array(("GET /v1/sessions/\(sessionID)/events HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n"
            + headers.map { "\($0.0): \($0.1)\r\n" }.joined() + "\r\n").utf8))
        head = try connection.readHead()
    }

    /// The next event (or comment block); nil when the stream has ended.
    func next() throws -> ServerSentEvent? {
        while true {
            if let end = text.range(of: "\n\n") {
                let block = String(text[..<end.lowerBound])
                text.removeSubrange(..<end.upperBound)
                var event = ServerSentEvent()
                for line in block.split(separator: "\n", omittingEmptySubsequences: false) {
                    if line.hasPrefix(":") { event.comment = line.dropFirst().trimmingCharacters(in: .whitespaces); continue }
                    let parts = line.split(separator: ":", maxSplits: 1)
                    let value = parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : ""
                    switch parts.first {
                    case "event": event.event = value
                    case "id": event.id = value
                    case "data": event.data = value
                    case "retry": event.retry = value
                    default: break
                    }
                }
                return event
            }
            guard !ended, let chunk = try connection.readChunk() else {
                ended = true
                return nil
            }
            text += String(decoding: chunk, as: UTF8.self)
        }
    }

    /// The next `state` event, skipping heartbeats and the retry hint.
    func nextState() throws -> (id: String, state: [String: Any])? {
        while let event = try next() {
            guard event.event == "state", let id = event.id, let data = event.data else { continue }
            let state = try JSONSerialization.jsonObject(with: Data(data.utf8)) as? [String: Any] ?? [:]
            return (id, state)
        }
        return nil
    }
}
