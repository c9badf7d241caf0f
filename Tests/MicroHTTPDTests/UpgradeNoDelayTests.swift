#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Synchronization
import Testing
@testable import MicroHTTPD
import TopChromeTesting

/// Reads whether Nagle's rule is off on each upgraded connection's TCP socket.
private final class NoDelayProbe: HTTPResponder {
    let noDelay = Mutex<Int32?>(nil)
    let upgraded = DispatchSemaphore(value: 0)

    func respond(to request: MicroHTTPDRequest) -> MicroHTTPDResponse {
        .upgrade(UpgradeResponse(headers: HTTPHeaders([("Upgrade", "websocket")])) { [self] socket in
            var value: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            if getsockopt(socket.networkDescriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &value, &length) == 0 {
                noDelay.withLock { $0 = value }
            }
            socket.close()
            upgraded.signal()
        })
    }
}

struct UpgradeNoDelayTests {
    /// A WebSocket's state and its answer leave as two small frames; with
    /// Nagle's rule the second waited for the client's delayed ACK, 40 ms a
    /// message (one client's request/answer pairs crawled at 25 a second).
    @Test func anUpgradedConnectionSendsWithoutWaitingForTheClientsAcknowledgement() throws {
        let probe = NoDelayProbe()
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        let server = HTTPServer(configuration: configuration, responder: probe)
        try server.start()
        defer { _ = server.stop(timeout: .seconds(5)) }
        let client = try connectedSocket(port: server.port)
        defer { close(client) }
        let request = Array("GET /x HTTP/1.1\r\nHost: t\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n".utf8)
        try #require(request.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == request.count)
        probe.upgraded.wait()
        #expect(probe.noDelay.withLock { $0 } == 1)
    }
}
