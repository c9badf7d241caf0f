import Foundation
import Redis
import RedisTestSupport
import Testing

/// Answers of a node that cannot serve for a moment are waited out within
/// the command's deadline, as the cluster clients people trust do, instead
/// of failing the request at once.
@Suite struct PassingTroubleTests {
    /// A Redis restarted from a snapshot answers `LOADING` until its data is
    /// in: a command sent meanwhile is answered once it is.
    @Test func aServerStillLoadingItsDataIsWaitedFor() async throws {
        // Slowed down so loading takes about a second, with events served
        // while it lasts (else connections would simply wait, unanswered).
        let server = try RedisServer(["--enable-debug-command", "yes", "--key-load-delay", "200",
                                      "--loading-process-events-interval-bytes", "1024"])
        _ = try redisCLI(port: server.port, "DEBUG", "POPULATE", "5000")
        _ = try redisCLI(port: server.port, "SAVE")
        server.stop()
        try server.restart()
        #expect(try redisCLI(port: server.port, "GET", "key:1").hasPrefix("LOADING"), "the server is still loading")
        let client = RedisClient(seeds: [server.node])
        defer { client.close() }
        let reply = try await client.send(["GET", "key:1"], deadline: .now + .seconds(20))
        #expect(reply == .bulk(Array("value:1".utf8)))
    }

    /// A deadline bounds the waiting: a server that stays unable to serve
    /// gives its own answer back once the time is up.
    @Test func theDeadlineEndsTheWait() async throws {
        let server = try RedisServer(["--enable-debug-command", "yes", "--key-load-delay", "2000",
                                      "--loading-process-events-interval-bytes", "1024"])
        _ = try redisCLI(port: server.port, "DEBUG", "POPULATE", "5000")
        _ = try redisCLI(port: server.port, "SAVE")
        server.stop()
        try server.restart()
        let client = RedisClient(seeds: [server.node])
        defer { client.close() }
        let started = ContinuousClock.now
        do {
            let reply = try await client.send(["GET", "key:1"], deadline: .now + .milliseconds(500))
            guard case let .error(message) = reply else {
                Issue.record("expected LOADING, got \(reply)")
                return
            }
            #expect(message.hasPrefix("LOADING"))
        } catch {
            #expect(error == .timeout, "the last try's reply did not come before the deadline")
        }
        // Loading lasts 10 s and more: an answer of LOADING or a timeout, not
        // the value, is the deadline's doing. (No upper bound on the time:
        // with the whole suite running, Dispatch may be late to run the
        // retries, and the assertion above already holds then.)
        #expect(ContinuousClock.now - started >= .milliseconds(250), "tried again meanwhile")
    }
}
