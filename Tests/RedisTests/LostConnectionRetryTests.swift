import Foundation
import Redis
import RedisTestSupport
import Testing

/// A command out when its connection drops: a read is sent once more once
/// Redis is back (within its deadline); a write is not, since it may have
/// run, and its caller hears so.
struct LostConnectionRetryTests {
    /// A Redis frozen with the commands in its socket (`bytes` of them,
    /// waited for there, not for a time a busy machine may overrun), then
    /// killed and started again from its snapshot: the connection drops
    /// under them.
    private func dropUnder(_ server: RedisServer, bytes: Int, _ send: () -> Void) async throws {
        server.signal(SIGSTOP)
        send()
        #expect(await eventually { unreadBytes(atPort: server.port) >= bytes }, "the commands reached Redis")
        server.stop()
        try server.restart()
    }

    @Test func aReadOutWhenItsConnectionDropsIsSentOnceMore() async throws {
        let server = try RedisServer()
        try redisCLI(port: server.port, "SET", "kept", "before")
        try redisCLI(port: server.port, "SAVE")
        let client = RedisClient(seeds: [server.node])
        defer { client.close() }
        // The first call also connects: under the thread sanitizer on a loaded machine, more than the default second.
        #expect(try await client.send(["GET", "kept"], deadline: .now + .seconds(10)) == .bulk(Array("before".utf8)))
        let (read, write) = (Outcome(), Outcome())
        let (get, set) = (["GET", "kept"].map { Array($0.utf8) }, ["SET", "kept", "after"].map { Array($0.utf8) })
        try await dropUnder(server, bytes: RESPRequest(get).bytes.count + RESPRequest(set).bytes.count) {
            client.send(get, deadline: .now + .seconds(600), idempotent: true) { read.set($0) }
            client.send(set, deadline: .now + .seconds(600)) { write.set($0) }
        }
        #expect(await eventually { read.value != nil && write.value != nil })
        #expect(try read.value?.get() == .bulk(Array("before".utf8)))
        guard case .failure(.connectionLost) = write.value else {
            Issue.record("a write must not be sent again, it may have run: \(String(describing: write.value))")
            return
        }
        #expect(try redisCLI(port: server.port, "GET", "kept").hasPrefix("before"))
    }
}

/// A command's result, set from an I/O thread.
private final class Outcome: @unchecked Sendable {
    private let lock = NSLock()
    private var result: Result<RESPValue, RedisError>?

    var value: Result<RESPValue, RedisError>? { lock.withLock { result } }

    func set(_ result: Result<RESPValue, RedisError>) {
        lock.withLock { self.result = result }
    }
}
