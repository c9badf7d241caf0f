import Dispatch
import Synchronization
import Testing
import MicroHTTPD
import TopChromeTesting
import WebSocketFrames

/// Adopts every upgraded connection into one loop, as the API does.
private final class AdoptingResponder: HTTPResponder {
    let loop = WebSocketLoop(limits: WebSocketLimits(maxMessageBytes: 1024, messagesPerSecond: 100, maxBufferedBytes: 65_536))
    let adopted = Mutex<[WebSocketConnection]>([])

    func respond(to request: MicroHTTPDRequest) -> MicroHTTPDResponse {
        let accept = WebSocketHandshake.acceptValue(forKey: TestWebSocket.key)
        return .upgrade(UpgradeResponse(headers: HTTPHeaders([("Upgrade", "websocket"), ("Sec-WebSocket-Accept", accept)])) { [self] socket in
            guard let connection = loop.adopt(socket, delegate: Silent()) else { return }
            adopted.withLock { $0.append(connection) }
            loop.start(connection)
        })
    }

    private final class Silent: WebSocketDelegate {
        func received(_ message: String, on connection: WebSocketConnection) {}
        func ended(_ connection: WebSocketConnection, code: WebSocketCloseCode) {}
    }
}

/// A stop waits for the sockets' closing handshakes, woken by the last
/// socket to go rather than polling.
struct WebSocketLoopStopTests {
    @Test func theLastSocketToCloseEndsTheWait() throws {
        let responder = AdoptingResponder()
        let server = try Self.started(responder)
        defer { _ = server.stop(timeout: .seconds(5)); responder.loop.stop() }
        let sockets = try (0..<3).map { _ in try TestWebSocket(port: server.port, path: "/") }
        #expect(eventually { responder.loop.count == 3 })

        responder.loop.closeAll(.goingAway)
        for socket in sockets { #expect(try socket.closeCode() == 1001) }
        for socket in sockets.dropLast() { try socket.send(.close, [0x03, 0xE9]) }
        // Waited for on a thread of its own: a lost wake would hold it for
        // the whole 10 minutes, far past this test's bound.
        let emptied = DispatchSemaphore(value: 0)
        let loop = responder.loop
        DispatchQueue.global().async {
            if loop.waitUntilEmpty(timeout: .seconds(600)) { emptied.signal() }
        }
        #expect(emptied.wait(timeout: .now() + 0.2) == .timedOut, "one socket is still open")
        try sockets.last?.send(.close, [0x03, 0xE9])
        #expect(emptied.wait(timeout: .now() + 30 * testTimeScale) == .success)
        #expect(responder.loop.count == 0)
    }

    @Test func aSocketThatStaysOpenHoldsTheWaitToItsTimeout() throws {
        let responder = AdoptingResponder()
        let server = try Self.started(responder)
        defer { _ = server.stop(timeout: .seconds(5)); responder.loop.stop() }
        let socket = try TestWebSocket(port: server.port, path: "/")
        #expect(eventually { responder.loop.count == 1 })
        #expect(!responder.loop.waitUntilEmpty(timeout: .milliseconds(100)))
        #expect(responder.loop.count == 1)
        _ = socket
    }

    /// A change delivered after the server stopped and let go of its loop
    /// (a Redis feed's thread, late) is dropped, not a crash: the connection
    /// keeps what it sends through.
    @Test func aConnectionOutlivesItsStoppedLoop() throws {
        var responder: AdoptingResponder? = AdoptingResponder()
        var server: HTTPServer? = try Self.started(responder!)
        let socket = try TestWebSocket(port: server!.port, path: "/")
        #expect(eventually { responder?.adopted.withLock { $0.count } == 1 })
        let connection = try #require(responder?.adopted.withLock { $0.first })
        responder?.loop.stop()
        _ = server?.stop(timeout: .seconds(5))
        server = nil
        responder = nil
        connection.send(Array("late".utf8))
        connection.sendNewest(Array("later".utf8))
        connection.close(.goingAway)
        _ = socket
    }

    private static func started(_ responder: AdoptingResponder) throws -> HTTPServer {
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        let server = HTTPServer(configuration: configuration, responder: responder)
        try server.start()
        return server
    }
}
