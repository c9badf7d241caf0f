import MicroHTTPD
import Synchronization
import Testing

/// The server lends each answer the buffers its connection's last answer
/// was sent from, so a keep-alive client's answers allocate nothing.
@Suite struct ResponseBuffersLiveTests {
    /// Writes every answer into the room it is lent, noting how much there was.
    final class RoomRecorder: HTTPResponder {
        let lent = Mutex<[Int]>([])

        func respond(to request: MicroHTTPDRequest) -> MicroHTTPDResponse { MicroHTTPDResponse(status: 500) }

        func respond(to request: MicroHTTPDRequest, reusing buffers: inout ResponseBuffers) -> MicroHTTPDResponse {
            var body = buffers.takeBody()
            lent.withLock { $0.append(body.capacity) }
            body.append(contentsOf: [UInt8](repeating: UInt8(ascii: "x"), count: 300))
            return MicroHTTPDResponse(status: 200, body: body)
        }
    }

    @Test func aConnectionsNextAnswerIsLentTheRoomItsLastWasSentFrom() throws {
        let recorder = RoomRecorder()
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        let server = HTTPServer(configuration: configuration, responder: recorder)
        try server.start()
        defer { _ = server.stop(timeout: .seconds(1)) }
        let client = try TestHTTPClient(port: server.port)
        for _ in 0..<3 {
            #expect(try client.request("GET", "/").body == [UInt8](repeating: UInt8(ascii: "x"), count: 300))
        }
        let lent = recorder.lent.withLock { $0 }
        #expect(lent.count == 3 && lent.first == 0, "the connection's first answer has no room yet: \(lent)")
        #expect(lent.dropFirst().allSatisfy { $0 >= 300 }, "each later answer is lent the last one's room: \(lent)")
    }
}
