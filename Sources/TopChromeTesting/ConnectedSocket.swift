#if canImport(Glibc)
import Glibc
#endif

/// A TCP socket connected to `host` (IPv4) on `port`: a test's own end of a
/// connection to a server under test. The caller closes it. `source`: the
/// address it comes from, e.g. `127.0.0.2` to be another client (all of
/// 127.0.0.0/8 is loopback); nil lets the kernel choose.
public func connectedSocket(port: Int, host: String = "127.0.0.1",
                            from source: String? = nil, receiveBuffer: Int32? = nil) throws(LoopbackSocketError) -> Int32 {
    let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard socket >= 0 else { throw LoopbackSocketError(call: "socket", errno: errno) }
    // Before connecting, so the window the client offers is small from the start (a reader that stalls).
    if var receiveBuffer {
        setsockopt(socket, SOL_SOCKET, SO_RCVBUF, &receiveBuffer, socklen_t(MemoryLayout<Int32>.size))
    }
    if let source {
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        let bound = inet_pton(AF_INET, source, &local.sin_addr) == 1 && withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
        guard bound else {
            let error = LoopbackSocketError(call: "bind", errno: errno)
            close(socket)
            throw error
        }
    }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
        close(socket)
        throw LoopbackSocketError(call: "inet_pton", errno: EINVAL)
    }
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else {
        let error = LoopbackSocketError(call: "connect", errno: errno)
        close(socket)
        throw error
    }
    return socket
}

/// A socket could not be set up; `call` names the system call that failed.
public struct LoopbackSocketError: Error, CustomStringConvertible {
    public let call: String
    public let errno: Int32

    public init(call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }

    public var description: String { "\(call) failed on a loopback socket: \(String(cString: strerror(errno)))" }
}
