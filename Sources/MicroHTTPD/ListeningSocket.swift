#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A bound, listening TCP socket, made here rather than by libmicrohttpd so a
/// failed bind reports its real cause ("Address already in use") instead of a
/// bare start failure, and so port 0 can be read back after binding.
struct ListeningSocket {
    let descriptor: Int32
    let isIPv6: Bool
    let port: Int
    /// Tells the socket apart from a later one that reuses its number.
    private let identity: Identity?

    private struct Identity: Equatable {
        let device: UInt
        let inode: UInt
    }

    init(host: String, port: Int, backlog: Int32) throws(HTTPServerError) {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            throw .cannotListen(host: host, port: port, reason: String(cString: gai_strerror(status)))
        }
        defer { freeaddrinfo(list) }

        let fd = socket(first.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .cannotListen(host: host, port: port, reason: Self.lastError()) }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        guard bind(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0,
              listen(fd, backlog) == 0
        else {
            let reason = Self.lastError()
            close(fd)
            throw .cannotListen(host: host, port: port, reason: reason)
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)

        var address = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let boundPort = withUnsafeMutablePointer(to: &address) { storage in
            storage.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        } == 0 ? Self.port(of: address) : port

        self.descriptor = fd
        self.isIPv6 = first.pointee.ai_family == AF_INET6
        self.port = boundPort
        self.identity = Self.identity(of: fd)
    }

    /// Closes the socket after libmicrohttpd refused to start with it, unless
    /// the library closed it already: it does for some refusals (bad TLS
    /// material) and not others (clashing options). By then the number may
    /// name a socket another thread has opened, which must not be closed.
    func closeUnlessClosed() {
        guard let identity, Self.identity(of: descriptor) == identity else { return }
        close(descriptor)
    }

    private static func identity(of descriptor: Int32) -> Identity? {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { return nil }
        return Identity(device: UInt(status.st_dev), inode: UInt(status.st_ino))
    }

    private static func port(of address: sockaddr_storage) -> Int {
        var address = address
        return withUnsafePointer(to: &address) { storage in
            if Int32(storage.pointee.ss_family) == AF_INET6 {
                return storage.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                    Int(UInt16(bigEndian: $0.pointee.sin6_port))
                }
            }
            return storage.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                Int(UInt16(bigEndian: $0.pointee.sin_port))
            }
        }
    }

    private static func lastError() -> String {
        String(cString: strerror(errno))
    }
}
