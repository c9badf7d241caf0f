import AccessTokens
import MicroHTTPD
import Synchronization
import TopChromeCore
import WebSocketFrames

/// `GET /v1/sessions/{id}/socket`: the WebSocket channel. The upgrade is
/// checked as any request is (the token, by the route's scope), then as
/// RFC 6455 wants, then the page's origin; the socket starts once the
/// feed listens to the session, as an event stream does.
extension SessionAPI {
    func openSocket(_ request: MicroHTTPDRequest, of id: SessionID, access: AccessToken?,
                    endpoint: Int) throws(Problem) -> MicroHTTPDResponse {
        let accept: String
        do {
            accept = try WebSocketHandshake.accept(upgrade: request.headers.combined("Upgrade"),
                                                   connection: request.headers.combined("Connection"),
                                                   version: request.headers.combined("Sec-WebSocket-Version"),
                                                   key: request.headers.combined("Sec-WebSocket-Key"))
        } catch {
            throw Self.handshakeRefused(error)
        }
        // Browsers send Origin on every WebSocket and let any page open one: the server is the only check.
        if let crossOrigin, let origin = request.headers.combined("Origin"), !crossOrigin.allows(origin) {
            throw CrossOriginPolicy.forbiddenSocket
        }
        let socket = SessionSocket(id: id, store: store, hub: watchers, access: access, heartbeatSeconds: heartbeatSeconds)
        let endsAfter = Self.secondsLeft(access)
        let response: @Sendable () -> UpgradeResponse = { [sockets, watchers, accessGate] in
            let ticket = UpgradeTicket(socket)
            var response = UpgradeResponse(headers: HTTPHeaders([("Upgrade", "websocket"), ("Sec-WebSocket-Accept", accept)])) { upgraded in
                ticket.taken.store(true, ordering: .releasing)
                guard let connection = sockets.adopt(upgraded, delegate: socket) else {
                    socket.abandon()
                    return
                }
                socket.attach(connection, endsAfter: endsAfter)
                Self.endIfRevokedMeanwhile(socket, accessGate, watchers)
                sockets.start(connection)
            }
            response.endpoint = endpoint
            return response
        }
        switch try subscribe(socket, to: id) {
        case let .now(result):
            socket.start(with: try started(socket, of: id, result))
            return .upgrade(response())
        case let .later(answer):
            let pending = PendingResponse()
            answer.whenAnswered { [watchers] result in
                do throws(Problem) {
                    socket.start(with: try Self.started(socket, of: id, result, hub: watchers))
                    pending.complete(with: response())
                } catch {
                    pending.complete(with: error.response)
                }
            }
            return .later(pending, endpoint: endpoint)
        }
    }

    /// RFC 6455 §4.2.2: a version we do not speak is 426 naming ours; a
    /// request that is no upgrade at all is told it needs one.
    static func handshakeRefused(_ refusal: WebSocketHandshake.Refusal) -> Problem {
        switch refusal {
        case .notAnUpgrade:
            Problem(status: 426, detail: "This is a WebSocket: send Upgrade: websocket and Connection: Upgrade.",
                    headers: [("Upgrade", "websocket"), ("Connection", "Upgrade")])
        case .unsupportedVersion:
            Problem(status: 426, detail: "Only WebSocket version \(WebSocketHandshake.supportedVersion) is spoken here.",
                    headers: [("Sec-WebSocket-Version", WebSocketHandshake.supportedVersion)])
        case .badKey:
            .badRequest("Sec-WebSocket-Key must be 16 bytes in base64.")
        }
    }

    /// Waits for the sockets' closing handshakes (begun by ``closeWatchers()``)
    /// for up to `timeout`, then closes what is left; no socket opens after.
    public func stopSockets(timeout: Duration) {
        _ = sockets.waitUntilEmpty(timeout: timeout)
        sockets.stop()
    }
}

/// Ends the watch of a socket whose 101 never went out (the client left
/// while the store answered): what holds the answer lets go of this.
private final class UpgradeTicket: Sendable {
    private let socket: SessionSocket
    let taken = Atomic<Bool>(false)

    init(_ socket: SessionSocket) {
        self.socket = socket
    }

    deinit {
        if !taken.load(ordering: .acquiring) { socket.abandon() }
    }
}
