import Foundation
import TopChromeTesting

/// The contract's changes sent as WebSocket messages: a scroll, inset,
/// behaviour or disappear request becomes `{"type", "id", "body"}` on the
/// session's socket, and its answer is read back as the HTTP answer would
/// be (the state and its ETag, `TopChrome-Stale-Reports`, or the problem
/// with its status). Everything else — creating, reading, deleting — goes
/// over HTTP, as an app's would.
final class SocketContractClient: ContractClient {
    private let port: Int
    private let http: any ContractClient
    private var sockets: [String: TestWebSocket] = [:]
    private var nextID = 0

    init(port: Int, http: any ContractClient) {
        self.port = port
        self.http = http
    }

    func execute(_ method: String, _ path: String, headers: [(String, String)], body: [UInt8]?) throws -> ReceivedResponse {
        guard let (id, type) = Self.change(method, path),
              headers.allSatisfy({ $0.0.lowercased() == "content-type" && $0.1 == "application/json" }) else {
            return try http.execute(method, path, headers: headers, body: body)
        }
        let socket = try socket(for: id)
        nextID += 1
        let requestID = String(nextID)
        var message = #"{"type":"\#(type)","id":"\#(requestID)""#
        if let body, !body.isEmpty { message += #","body":"# + String(decoding: body, as: UTF8.self) }
        try socket.send(text: message + "}")
        // One message at a time: the next answer is this one's (a message
        // too malformed to read its id from is answered without one).
        let answer = try socket.next(ofType: "answer")
        if let problem = answer["problem"] as? [String: Any] {
            return ReceivedResponse(status: problem["status"] as? Int ?? 0, headers: [("Content-Type", "application/problem+json")],
                                    body: Array(try JSONSerialization.data(withJSONObject: problem)))
        }
        guard answer["id"] as? String == requestID, let state = answer["state"] as? [String: Any] else {
            throw TestClientError.malformed("\(answer)")
        }
        var fields: [(name: String, value: String)] = [("Content-Type", "application/json")]
        if let etag = answer["etag"] as? String { fields.append(("ETag", etag)) }
        if let stale = answer["staleReports"] as? Int { fields.append(("TopChrome-Stale-Reports", String(stale))) }
        return ReceivedResponse(status: 200, headers: fields, body: Array(try JSONSerialization.data(withJSONObject: state)))
    }

    /// The session and message type of a change the socket carries.
    private static func change(_ method: String, _ path: String) -> (id: String, type: String)? {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 5, parts[0].isEmpty, parts[1] == "v1", parts[2] == "sessions" else { return nil }
        switch (method, parts[4]) {
        case ("POST", "scroll"), ("POST", "disappear"), ("PUT", "inset"), ("PUT", "behavior"): return (String(parts[3]), String(parts[4]))
        default: return nil
        }
    }

    private func socket(for id: String) throws -> TestWebSocket {
        if let open = sockets[id] { return open }
        let socket = try TestWebSocket(port: port, path: "/v1/sessions/\(id)/socket")
        _ = try socket.next(ofType: "state")
        sockets[id] = socket
        return socket
    }
}
