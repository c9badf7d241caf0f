import Foundation
#if canImport(Glibc)
import Glibc
#endif
import WebSocketFrames

/// Why a test's own client failed: no connection (its errno), closed, or an answer that is not what it expected.
public enum TestClientError: Error {
    case connect(Int32)
    case closed
    case malformed(String)
}

/// A WebSocket client on one TCP connection that sends exactly the frames a
/// test writes (masked or not, fragmented, broken) and reads the server's.
public final class TestWebSocket {
    private let fd: Int32
    private var received: ReceivedBytes
    /// The 101's head.
    public private(set) var handshake = ReceivedResponse(status: 0, headers: [], body: [])

    /// A frame as the server sent it.
    public struct Frame {
        public var opcode: UInt8
        public var fin: Bool
        public var payload: [UInt8]
        public var text: String { String(decoding: payload, as: UTF8.self) }
        /// A close frame's code; nil without one.
        public var closeCode: UInt16? { payload.count >= 2 ? UInt16(payload[0]) << 8 | UInt16(payload[1]) : nil }
    }

    public static let key = "dGhlIHNhbXBsZSBub25jZQ=="

    /// Opens the socket; throws `TestClientError.malformed` with the answer if it is not a 101.
    /// `receiveTimeout`: seconds a read waits (times `testTimeScale`); nil, for ever.
    /// `receiveBuffer`: a small one makes a reader whose server's writes back up after a few kilobytes.
    public init(port: Int, path: String, headers: [(String, String)] = [], receiveTimeout: Double? = 10,
                receiveBuffer: Int32? = nil) throws {
        let fd: Int32
        do { fd = try connectedSocket(port: port, receiveBuffer: receiveBuffer) } catch { throw TestClientError.connect(error.errno) }
        if let receiveTimeout {
            var timeout = timeval(tv_sec: Int(receiveTimeout * testTimeScale), tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }
        self.fd = fd
        received = ReceivedBytes(from: fd)
        var head = "GET \(path) HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: \(Self.key)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        try send(raw: Array((head + "\r\n").utf8))
        let text = String(decoding: try received.take(upTo: [13, 10, 13, 10]), as: UTF8.self)
        var lines = text.components(separatedBy: "\r\n")
        let status = Int(lines.removeFirst().split(separator: " ")[1]) ?? 0
        handshake = ReceivedResponse(status: status, headers: lines.compactMap { line in
            line.firstIndex(of: ":").map { (String(line[..<$0]), line[line.index(after: $0)...].trimmingCharacters(in: .whitespaces)) }
        }, body: [])
        guard status == 101 else { throw TestClientError.malformed(text) }
    }

    deinit { close(fd) }

    /// Ends the connection both ways: a read waiting on another thread returns.
    public func shutdown() {
        _ = Glibc.shutdown(fd, Int32(SHUT_RDWR))
    }

    public func send(raw bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw TestClientError.closed }
            sent += n
        }
    }

    public func send(_ opcode: WebSocketOpcode, _ payload: [UInt8], fin: Bool = true) throws {
        try send(raw: WebSocketFrameWriter.frame(opcode, payload, fin: fin, mask: (0x37, 0xFA, 0x21, 0x3D)))
    }

    public func send(text: String) throws { try send(.text, Array(text.utf8)) }

    /// The next frame, whatever it is.
    public func readFrame() throws -> Frame {
        try received.need(2)
        var length = Int(received.bytes[1] & 0x7F)
        var header = 2
        if length == 126 {
            try received.need(4)
            length = Int(received.bytes[2]) << 8 | Int(received.bytes[3])
            header = 4
        } else if length == 127 {
            try received.need(10)
            length = (2..<10).reduce(0) { $0 << 8 | Int(received.bytes[$1]) }
            header = 10
        }
        let first = received.bytes[0]
        let frame = try received.take(header + length)
        return Frame(opcode: first & 0x0F, fin: first & 0x80 != 0, payload: Array(frame[header...]))
    }

    /// The next text message as JSON, pings answered and passed over.
    public func nextMessage() throws -> [String: Any] {
        while true {
            let frame = try readFrame()
            switch frame.opcode {
            case 0x1:
                guard let object = try JSONSerialization.jsonObject(with: Data(frame.payload)) as? [String: Any] else {
                    throw TestClientError.malformed(frame.text)
                }
                return object
            case 0x9: try send(.pong, frame.payload)
            case 0x8: throw TestClientError.closed
            default: continue
            }
        }
    }

    /// Messages until one of `type`, which is returned.
    public func next(ofType type: String) throws -> [String: Any] {
        while true {
            let message = try nextMessage()
            if message["type"] as? String == type { return message }
        }
    }

    /// Reads past messages to the server's close frame and returns its code.
    public func closeCode() throws -> UInt16? {
        while true {
            let frame = try readFrame()
            if frame.opcode == 0x8 { return frame.closeCode }
        }
    }

    /// True once the server has closed the TCP connection (after its close frame, if any).
    public func isClosedByServer() -> Bool {
        var byte: UInt8 = 0
        return received.isEmpty && recv(fd, &byte, 1, 0) == 0
    }
}
