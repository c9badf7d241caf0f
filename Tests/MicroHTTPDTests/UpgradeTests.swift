#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Testing
import MicroHTTPD
import TopChromeTesting

/// Hands every request's connection to an echo: what the client sends after
/// the 101 comes back, bytes read with the head included, until it shuts
/// its side; then the socket is closed through the library. The socket is
/// non-blocking (libmicrohttpd's), so the echo waits in poll(2).
struct EchoOnUpgrade: HTTPResponder {
    func respond(to request: MicroHTTPDRequest) -> MicroHTTPDResponse {
        .upgrade(UpgradeResponse(headers: HTTPHeaders([("Upgrade", "echo")])) { socket in
            DispatchQueue.global().async {
                var pending = socket.bytesAlreadyRead
                var buffer = [UInt8](repeating: 0, count: 4096)
                while true {
                    if !pending.isEmpty {
                        let sent = pending.withUnsafeBytes { send(socket.descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                        if sent < 0 && (errno == EAGAIN || errno == EINTR) {
                            var writable = pollfd(fd: socket.descriptor, events: Int16(POLLOUT), revents: 0)
                            _ = poll(&writable, 1, -1)
                            continue
                        }
                        if sent <= 0 { break }
                        pending.removeFirst(sent)
                        continue
                    }
                    var readable = pollfd(fd: socket.descriptor, events: Int16(POLLIN), revents: 0)
                    guard poll(&readable, 1, -1) == 1 else { break }
                    let count = recv(socket.descriptor, &buffer, buffer.count, 0)
                    if count < 0 && (errno == EAGAIN || errno == EINTR) { continue }
                    if count <= 0 { break }
                    pending = Array(buffer[..<count])
                }
                socket.close()
            }
        })
    }
}

struct UpgradeTests {
    @Test func theConnectionIsTheProtocolsAfterThe101() throws {
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        let server = HTTPServer(configuration: configuration, responder: EchoOnUpgrade())
        try server.start()
        defer { _ = server.stop(timeout: .seconds(5)) }
        let client = try connectedSocket(port: server.port)
        defer { close(client) }
        // The first bytes of the new protocol come with the request.
        try sendAll(client, "GET /x HTTP/1.1\r\nHost: t\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\nfirst")
        var received = try receive(client, until: "first")
        let head = String(decoding: received, as: UTF8.self)
        #expect(head.hasPrefix("HTTP/1.1 101 "))
        #expect(head.lowercased().contains("upgrade: echo\r\n"))
        #expect(head.hasSuffix("\r\n\r\nfirst"))
        try sendAll(client, "second")
        received = try receive(client, until: "second")
        #expect(received == Array("second".utf8))
        shutdown(client, Int32(SHUT_WR))
        // The echo closes the socket through the library: the client reads its end.
        var byte: UInt8 = 0
        #expect(recv(client, &byte, 1, 0) == 0)
    }

    private func sendAll(_ socket: Int32, _ text: String) throws {
        let bytes = Array(text.utf8)
        let sent = bytes.withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        try #require(sent == bytes.count)
    }

    /// Reads until what came ends with `suffix` (blocking: the server answers or closes).
    private func receive(_ socket: Int32, until suffix: String) throws -> [UInt8] {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !String(decoding: received, as: UTF8.self).hasSuffix(suffix) {
            let count = recv(socket, &buffer, buffer.count, 0)
            try #require(count > 0, "closed (errno \(errno)) after \(String(decoding: received, as: UTF8.self))")
            received += buffer[..<count]
        }
        return received
    }
}
