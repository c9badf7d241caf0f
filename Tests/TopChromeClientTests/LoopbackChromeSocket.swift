import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import TopChromeClient
import TopChromeTesting

/// The client's socket on Linux, where Foundation's `URLSessionWebSocketTask`
/// has no WebSocket in Debian's libcurl: the same messages over a test
/// WebSocket on loopback, read on a thread of its own, so the client's
/// channel is tried against the real server. Counts what it carried.
final class LoopbackChromeSocket: ChromeSocket, @unchecked Sendable {
    private let lock = NSLock()
    private var socket: TestWebSocket?
    private var closed = false
    private let messages: AsyncThrowingStream<String, any Error>
    private let output: AsyncThrowingStream<String, any Error>.Continuation
    private var iterator: AsyncThrowingStream<String, any Error>.AsyncIterator
    /// Text messages sent by the client, for tests that count them.
    private(set) var sent: [String] {
        get { lock.withLock { sentMessages } }
        set { lock.withLock { sentMessages = newValue } }
    }
    private var sentMessages: [String] = []

    /// Sends that go nowhere, as on a network that died without a word.
    private let dropsSends: Bool

    init(_ request: URLRequest, dropsSends: Bool = false) {
        self.dropsSends = dropsSends
        (messages, output) = AsyncThrowingStream.makeStream(of: String.self)
        iterator = messages.makeAsyncIterator()
        let thread = Thread { [self] in read(request) }
        thread.start()
    }

    /// Opens sockets that it keeps, for tests to look at.
    final class Opener: @unchecked Sendable {
        private let lock = NSLock()
        private var made: [LoopbackChromeSocket] = []
        /// The first socket's sends go nowhere.
        private let firstDropsSends: Bool
        var sockets: [LoopbackChromeSocket] { lock.withLock { made } }

        init(firstDropsSends: Bool = false) {
            self.firstDropsSends = firstDropsSends
        }

        var open: ChromeSocketOpener {
            { [self] request in
                let socket = LoopbackChromeSocket(request, dropsSends: firstDropsSends && sockets.isEmpty)
                lock.withLock { made.append(socket) }
                return socket
            }
        }
    }

    private func read(_ request: URLRequest) {
        guard let url = request.url, let port = url.port else { return output.finish(throwing: ChromeSocketRefused(status: nil)) }
        let headers = (request.allHTTPHeaderFields ?? [:]).map { ($0.key, $0.value) }
        let socket: TestWebSocket
        do {
            socket = try TestWebSocket(port: port, path: url.path, headers: headers, receiveTimeout: nil)
        } catch let TestClientError.malformed(head) {
            let status = head.split(separator: " ").dropFirst().first.flatMap { Int($0) }
            return output.finish(throwing: ChromeSocketRefused(status: status))
        } catch {
            return output.finish(throwing: error)
        }
        let isClosed = lock.withLock { () -> Bool in
            self.socket = socket
            return closed
        }
        if isClosed { socket.shutdown() }
        do {
            while true {
                let frame = try socket.readFrame()
                switch frame.opcode {
                case 0x1: output.yield(frame.text)
                case 0x9: try lock.withLock { try socket.send(.pong, frame.payload) }
                case 0x8: return output.finish(throwing: ChromeSocketClosed(code: frame.closeCode.map(Int.init)))
                default: continue
                }
            }
        } catch {
            output.finish(throwing: error)
        }
    }

    func receive() async throws -> String {
        guard let text = try await iterator.next() else { throw ChromeSocketClosed(code: nil) }
        return text
    }

    func send(_ text: String) async throws {
        try lock.withLock {
            guard let socket, !closed else { throw ChromeSocketClosed(code: nil) }
            if !dropsSends { try socket.send(text: text) }
            sentMessages.append(text)
        }
    }

    func close() {
        lock.withLock {
            closed = true
            socket?.shutdown()
        }
    }
}
