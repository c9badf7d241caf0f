#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Synchronization
import Testing
import MicroHTTPD
import TopChromeTesting
import WebSocketFrames

/// Adopts every upgraded connection into a WebSocket loop and says which
/// TCP options its socket has once the loop watches it.
private final class AdoptingResponder: HTTPResponder, WebSocketDelegate {
    let loop = WebSocketLoop(limits: WebSocketLimits(maxMessageBytes: 1024, messagesPerSecond: 100, maxBufferedBytes: 65_536))
    let noDelay = Mutex<Int32?>(nil)
    let adopted = DispatchSemaphore(value: 0)

    func respond(to request: MicroHTTPDRequest) -> MicroHTTPDResponse {
        .upgrade(UpgradeResponse(headers: HTTPHeaders([("Upgrade", "websocket")])) { [self] socket in
            defer { adopted.signal() }
            guard let connection = loop.adopt(socket, delegate: self) else { return }
            loop.start(connection)
            var value: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            if getsockopt(socket.descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &value, &length) == 0 {
                noDelay.withLock { $0 = value }
            }
        })
    }

    func received(_ message: String, on connection: WebSocketConnection) {}
    func ended(_ connection: WebSocketConnection, code: WebSocketCloseCode) {}
}

struct WebSocketLoopTests {
    /// A state and its answer leave as two small frames; with Nagle's rule
    /// the second waited for the client's delayed ACK, 40 ms a message
    /// (one client's request/answer pairs crawled at 25 a second).
    @Test func framesLeaveWithoutWaitingForTheClientsAcknowledgement() throws {
        let responder = AdoptingResponder()
        defer { responder.loop.stop() }
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        let server = HTTPServer(configuration: configuration, responder: responder)
        try server.start()
        defer { _ = server.stop(timeout: .seconds(5)) }
        let client = try connectedSocket(port: server.port)
        defer { close(client) }
        let request = Array("GET /x HTTP/1.1\r\nHost: t\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n".utf8)
        try #require(request.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == request.count)
        responder.adopted.wait()
        #expect(responder.noDelay.withLock { $0 } == 1)
    }
}
