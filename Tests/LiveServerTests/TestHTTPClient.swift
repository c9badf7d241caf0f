import Foundation
#if canImport(Glibc)
import Glibc
#endif
import TopChromeTesting

/// A plain HTTP/1.1 client on one TCP connection, so tests control exactly
/// what is sent (keep-alive, raw bytes, huge bodies) and see every header.
final class TestHTTPClient: ContractClient {
    private let fd: Int32
    private var received: ReceivedBytes

    /// Takes the socket only once it is connected: a class whose properties
    /// are all set runs its deinit when its init throws, so a socket stored
    /// first and closed on failure would be closed twice, and the second
    /// close would take whatever descriptor another test opened meanwhile.
    /// - Parameter source: the client's own address (see `connectedSocket`).
    init(port: Int, host: String = "127.0.0.1", from source: String? = nil) throws {
        let fd: Int32
        do { fd = try connectedSocket(port: port, host: host, from: source) } catch { throw TestClientError.connect(error.errno) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        self.fd = fd
        received = ReceivedBytes(from: fd)
    }

    deinit { close(fd) }

    func send(raw bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw TestClientError.closed }
            sent += n
        }
    }

    func execute(_ method: String, _ path: String, headers: [(String, String)], body: [UInt8]?) throws -> ReceivedResponse {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: localhost\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if let body { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        try send(raw: Array(head.utf8) + (body ?? []))
        return try readResponse(toHead: method == "HEAD")
    }

    func readResponse(toHead: Bool = false) throws -> ReceivedResponse {
        var response = try readHead()
        let status = response.status
        let length = toHead || status == 204 || status == 304 ? 0 : Int(response.header("Content-Length") ?? "0") ?? 0
        response.body = try received.take(length)
        return response
    }

    /// Reads the status line and headers only (for streamed bodies).
    func readHead() throws -> ReceivedResponse {
        let head = String(decoding: try received.take(upTo: [13, 10, 13, 10]), as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else { throw TestClientError.malformed(head) }
        let headers = lines.compactMap { line -> (name: String, value: String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        return ReceivedResponse(status: status, headers: headers, body: [])
    }

    /// The next chunk of a chunked body; nil at its end (the zero-size chunk).
    func readChunk() throws -> [UInt8]? {
        let sizeText = String(decoding: try received.take(upTo: [13, 10]), as: UTF8.self).split(separator: ";")[0]
        guard let size = Int(sizeText, radix: 16) else { throw TestClientError.malformed(sizeText.description) }
        let chunk = try received.take(size + 2).dropLast(2)
        return size == 0 ? nil : Array(chunk)
    }

    func setReadTimeout(seconds: Int) {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Whether a byte from the server waits to be read now (without waiting).
    func hasPendingInput() -> Bool {
        if !received.isEmpty { return true }
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) == 1
    }

    /// Sends the end of the stream (a half-close): the client still reads.
    func finishSending() {
        shutdown(fd, Int32(SHUT_WR))
    }

    /// True once the server has closed this connection.
    func isClosedByServer() -> Bool {
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, 0) == 0
    }
}
