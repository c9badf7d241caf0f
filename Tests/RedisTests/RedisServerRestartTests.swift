import Foundation
import Glibc
import RedisTestSupport
import Testing

/// The tests' own Redis: a node stopped to be brought back keeps its ports,
/// or a port the kernel hands to another test's server (in this process or
/// another) makes the restart fail with "Address already in use".
struct RedisServerRestartTests {
    @Test func aStoppedServersPortsAreKeptForItsRestart() throws {
        let server = try RedisServer(clusterNode: true)
        server.stop()
        #expect(!Self.canListen(on: server.port), "a stopped server's port was free for anyone")
        try server.restart()
        #expect(try server.cli(["PING"]).contains("PONG"))
        server.stop()
        try server.restart()
        #expect(try server.cli(["PING"]).contains("PONG"))
    }

    /// As a server that does not set SO_REUSEADDR binds a port.
    private static func canListen(on port: Int) -> Bool {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        return bound == 0 && listen(socket, 1) == 0
    }
}
