import Foundation
import Testing
import TopChromeTesting
import WebSocketFrames

/// RFC 6455 as the server speaks it on the channel: what a client must do
/// (mask, send UTF-8 text, stay within the limits, answer pings) and how
/// each breach closes the socket, by its code. The Python conformance set
/// (Tests/scripts/check-websocket.py) covers Autobahn's categories with
/// another peer; these hold the server's side from Swift.
@Suite struct WebSocketProtocolLiveTests {
    let server: LiveServer
    let id: String

    init() throws {
        server = try LiveServer(memoryOnly: true) { configuration in
            configuration.limits.maxBodyBytes = 1024
            configuration.limits.socketMessagesPerSecond = 20
            configuration.sessions.heartbeatSeconds = 1
        }
        id = try server.createSession()
    }

    func open() throws -> TestWebSocket {
        let socket = try TestWebSocket(port: server.port, path: "/v1/sessions/\(id)/socket")
        _ = try socket.next(ofType: "state")
        return socket
    }

    @Test func anUnmaskedFrameIsAProtocolError() throws {
        let socket = try open()
        try socket.send(raw: WebSocketFrameWriter.text(#"{"type":"disappear"}"#))
        #expect(try socket.closeCode() == 1002)
    }

    @Test func textThatIsNotUTF8Closes1007() throws {
        let socket = try open()
        try socket.send(.text, [0x7B, 0xC3, 0x28, 0x7D])
        #expect(try socket.closeCode() == 1007)
    }

    @Test func aMessageOverTheBodyLimitCloses1009() throws {
        let socket = try open()
        try socket.send(.text, Array(repeating: UInt8(ascii: " "), count: 1025))
        #expect(try socket.closeCode() == 1009)
    }

    @Test func aBinaryMessageIsAPolicyViolation() throws {
        let socket = try open()
        try socket.send(.binary, [1, 2, 3])
        #expect(try socket.closeCode() == 1008)
    }

    @Test func moreMessagesASecondThanAllowedClose1008() throws {
        let socket = try open()
        for _ in 0..<40 { try socket.send(text: #"{"type":"disappear"}"#) }
        #expect(try socket.closeCode() == 1008)
    }

    @Test func fragmentsWithAPingBetweenThemMakeOneMessage() throws {
        let socket = try open()
        let text = Array(#"{"type":"inset","id":"f","body":{"inset":21}}"#.utf8)
        try socket.send(.text, Array(text[..<10]), fin: false)
        try socket.send(.ping, [7, 7])
        try socket.send(.continuation, Array(text[10..<20]), fin: false)
        try socket.send(.continuation, Array(text[20...]))
        var pong: TestWebSocket.Frame
        repeat { pong = try socket.readFrame() } while pong.opcode != 0xA
        #expect(pong.payload == [7, 7])
        #expect(try socket.next(ofType: "answer")["id"] as? String == "f")
    }

    @Test func aClientsCloseIsAnsweredWithItsCodeThenTheSocketEnds() throws {
        let socket = try open()
        try socket.send(.close, [0x0F, 0xA0] + Array("bye".utf8))  // 4000
        #expect(try socket.closeCode() == 4000)
        #expect(eventually { socket.isClosedByServer() })
    }

    @Test func theServerPingsAndClosesAClientThatNeverAnswers() throws {
        let socket = try open()
        // Read frames, answering nothing: pings come each second, then the close.
        var sawPing = false
        while true {
            let frame = try socket.readFrame()
            if frame.opcode == 0x9 { sawPing = true }
            if frame.opcode == 0x8 {
                #expect(frame.closeCode == 1008)
                break
            }
        }
        #expect(sawPing)
    }

    @Test func closesAreCountedByCodeInMetrics() throws {
        let socket = try open()
        try socket.send(.binary, [0])
        #expect(try socket.closeCode() == 1008)
        #expect(eventually {
            let metrics = (try? server.client().request("GET", "/metrics").text) ?? ""
            return metrics.contains(#"topchrome_websocket_closes_total{code="1008"} 1"#)
                && metrics.contains("topchrome_websocket_open 0")
        })
    }
}
