#if canImport(Glibc)
import Glibc
#endif

/// `topchrome healthcheck`: asks the running server's `/healthz` and exits
/// 0 if it answers 200. Container images carry no curl, so the binary
/// checks itself; it reads the same flags and environment as the server.
enum HealthCheck {
    static func run(host: String, port: Int) -> Int32 {
        // A server listening on every address is reached on loopback.
        let target = host == "0.0.0.0" ? "127.0.0.1" : host == "::" ? "::1" : host
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(target, String(port), &hints, &list) == 0, let address = list else { return 1 }
        defer { freeaddrinfo(list) }

        let fd = socket(address.pointee.ai_family, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return 1 }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 3, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard connect(fd, address.pointee.ai_addr, address.pointee.ai_addrlen) == 0 else { return 1 }

        let request = Array("GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".utf8)
        guard send(fd, request, request.count, Int32(MSG_NOSIGNAL)) == request.count else { return 1 }
        var reply = [UInt8](repeating: 0, count: 64)
        let received = recv(fd, &reply, reply.count, 0)
        guard received > 0 else { return 1 }
        return String(decoding: reply[..<received], as: UTF8.self).hasPrefix("HTTP/1.1 200") ? 0 : 1
    }
}
