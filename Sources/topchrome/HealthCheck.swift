#if canImport(Glibc)
import Glibc
#endif

/// `topchrome healthcheck`: asks the running server's `/healthz` and exits
/// 0 if it answers 200. Container images carry no curl, so the binary
/// checks itself; it reads the same flags and environment as the server.
/// A failure says why on stderr (refused, timed out, the status), since an
/// orchestrator shows that line and an operator acts on it.
enum HealthCheck {
    /// How long the connection and the answer may each take.
    static let timeoutSeconds = 3

    static func run(host: String, port: Int) -> Int32 {
        switch check(host: host, port: port) {
        case nil:
            return 0
        case let failure?:
            printToStandardError("topchrome healthcheck: \(failure)")
            return 1
        }
    }

    /// Why the server is not healthy, or nil if it is.
    static func check(host: String, port: Int) -> String? {
        // A server listening on every address is reached on loopback.
        let target = host == "0.0.0.0" ? "127.0.0.1" : host == "::" ? "::1" : host
        let server = (target.contains(":") ? "[\(target)]" : target) + ":\(port)"
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let resolved = getaddrinfo(target, String(port), &hints, &list)
        guard resolved == 0, let address = list else {
            return "cannot resolve \(target) (\(String(cString: gai_strerror(resolved))))"
        }
        defer { freeaddrinfo(list) }

        let fd = socket(address.pointee.ai_family, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return "cannot open a socket (\(String(cString: strerror(errno))))" }
        defer { close(fd) }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard connect(fd, address.pointee.ai_addr, address.pointee.ai_addrlen) == 0 else {
            return switch errno {
            case ECONNREFUSED: "connection to \(server) refused: no server listens there"
            // A blocking connect past SO_SNDTIMEO fails with EINPROGRESS.
            case EINPROGRESS, EAGAIN, ETIMEDOUT: "connecting to \(server) timed out after \(timeoutSeconds) s"
            case let code: "cannot connect to \(server) (\(String(cString: strerror(code))))"
            }
        }

        let request = Array("GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".utf8)
        guard send(fd, request, request.count, Int32(MSG_NOSIGNAL)) == request.count else {
            return "cannot send the request to \(server) (\(String(cString: strerror(errno))))"
        }
        var reply = [UInt8](repeating: 0, count: 64)
        let received = recv(fd, &reply, reply.count, 0)
        if received < 0 {
            return errno == EAGAIN || errno == EWOULDBLOCK
                ? "\(server) did not answer GET /healthz within \(timeoutSeconds) s"
                : "reading the answer from \(server) failed (\(String(cString: strerror(errno))))"
        }
        guard received > 0 else { return "\(server) closed the connection without answering GET /healthz" }
        return verdict(on: reply[..<received], from: server)
    }

    /// nil for a 200, else what the status line says.
    static func verdict(on head: ArraySlice<UInt8>, from server: String) -> String? {
        // "HTTP/1.1 503 ...": the status is the three digits after the first space.
        let text = String(decoding: head, as: UTF8.self)
        guard text.hasPrefix("HTTP/"), let space = text.firstIndex(of: " ") else {
            return "\(server) answered GET /healthz with something that is not HTTP (a TLS port?)"
        }
        let code = text[text.index(after: space)...].prefix(3)
        guard code.count == 3, code.allSatisfy(\.isNumber) else {
            return "\(server) answered GET /healthz with something that is not HTTP (a TLS port?)"
        }
        return code == "200" ? nil : "\(server) answered GET /healthz with status \(code)"
    }
}
