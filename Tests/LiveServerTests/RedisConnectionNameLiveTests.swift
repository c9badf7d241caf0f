import Foundation
import RedisSessionStore
import RedisTestSupport
import Testing
import TopChromeTesting

/// An operator's `CLIENT LIST` tells this service's connections apart:
/// each names itself `topchrome:<host>:<pid>`. Where Redis refuses the
/// names (no `+client|setname`; `CLIENT SETINFO` before Redis 7.2), the
/// connections serve all the same.
@Suite struct RedisConnectionNameLiveTests {
    static func serve(_ arguments: [String]) throws -> (ProcessLifecycleTests.RunningServer, TestHTTPClient) {
        // Redis's timeout as LiveServer's: these are about names, not speed.
        let server = try ProcessLifecycleTests.RunningServer(["--port", "0", "--threads", "1", "--redis-timeout", "5"] + arguments)
        _ = try server.waitUntilListening()
        return (server, try TestHTTPClient(port: server.port))
    }

    @Test func eachConnectionNamesItsProcess() throws {
        let redis = try RedisServer()
        let (server, client) = try Self.serve(["--store", "redis://127.0.0.1:\(redis.port)"])
        #expect(try client.json("POST", "/v1/sessions", "").status == 201, "Redis 7.0's refusal of CLIENT SETINFO is let be")
        let host = ProcessInfo.processInfo.hostName.filter { !$0.isWhitespace }
        let name = "name=topchrome:\(host):\(server.process.processIdentifier) "
        let list = try redis.cli(["CLIENT", "LIST"])
        #expect(list.split(separator: "\n").contains { $0.contains(name) }, "\(list)")
    }

    @Test func aUserThatMayNotNameItsConnectionsIsServed() throws {
        let redis = try RedisServer()
        try redis.cli(["FUNCTION", "LOAD", "REPLACE", ChromeFunctions.library])
        let user = try RedisPermissionLiveTests.user(redis, "unnamed", lacking: ["+client|setname"])
        let (server, client) = try Self.serve(user)
        defer { withExtendedLifetime(server) {} }
        #expect(try client.json("POST", "/v1/sessions", "").status == 201)
        #expect(!(try redis.cli(["CLIENT", "LIST"]).contains("name=topchrome:")))
    }
}
