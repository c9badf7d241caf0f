import Foundation
import Redis
import RedisSessionStore
import RedisTestSupport
import Testing
import TopChromeCore

/// A change carries its deadline into Redis: one that timed out while
/// queued behind another's `WAIT` (a stalled replica) never runs after
/// its caller was told, so a client's retry elsewhere is not overwritten.
struct LateChangeTests {
    @Test func aChangeQueuedPastItsDeadlineBehindAWaitIsNeverMade() async throws {
        let primary = try RedisServer(["--repl-diskless-sync-delay", "0"])
        let replica = try RedisServer(["--replicaof", "127.0.0.1", String(primary.port)])
        #expect(await eventually(within: 10) { (try? redisCLI(port: primary.port, "INFO", "replication"))?.contains("state=online") == true })
        var configuration = RedisConfiguration()
        configuration.setupCommands = [ChromeFunctions.loadCommand]
        configuration.commandTimeout = .milliseconds(300)
        let client = RedisClient(seeds: [primary.node], configuration: configuration)
        defer { client.close() }
        let plain = ChromeFunctions(client: client, keyPrefix: "late:")
        let waiting = ChromeFunctions(client: client, keyPrefix: "late:",
                                      replicaAcknowledgement: ReplicaAcknowledgement(replicas: 1, timeout: .seconds(3)))
        let id = SessionID.random()
        _ = try await plain.create(id, inset: 0)

        replica.signal(SIGSTOP)
        defer { replica.signal(SIGCONT) }
        // The first change runs and its WAIT holds the changes' connection
        // for 3 s; the second, sent well after (a loaded machine may be slow
        // to send the first), waits behind it past its 0.3 s deadline.
        async let first = outcome { () async throws(ChromeFunctionError) in try await waiting.apply([.setInset(10)], to: id, if: .always) }
        try await Task.sleep(for: .milliseconds(250))
        let second = await outcome { () async throws(ChromeFunctionError) in try await waiting.apply([.setInset(20)], to: id, if: .always) }
        #expect(second == ChromeFunctionError.redis(.timeout), "\(String(describing: second))")
        #expect(await first == ChromeFunctionError.notReplicated(wanted: 1, acknowledged: 0))
        // The second change reached Redis once the WAIT ended, past its deadline.
        try await Task.sleep(for: .milliseconds(300))
        let stored = try #require(try await plain.session(id))
        #expect(stored.state.inset == 10 && stored.state.version == 2, "the late change was refused: \(stored.state)")
    }

    private func outcome(_ change: () async throws(ChromeFunctionError) -> AppliedInputs) async -> ChromeFunctionError? {
        do {
            _ = try await change()
            return nil
        } catch {
            return error
        }
    }
}
