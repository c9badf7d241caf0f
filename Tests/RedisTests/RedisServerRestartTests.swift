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
        guard let socket = boundLoopbackSocket(port: port, reuseAddress: false) else { return false }
        defer { close(socket) }
        return listen(socket, 1) == 0
    }
}
