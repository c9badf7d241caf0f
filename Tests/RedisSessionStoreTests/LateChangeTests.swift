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
        configuration.commandTimeout = timeScaled(.milliseconds(300))
        let client = RedisClient(seeds: [primary.node], configuration: configuration)
        defer { client.close() }
        let plain = ChromeFunctions(client: client, keyPrefix: "late:")
        let waiting = ChromeFunctions(client: client, keyPrefix: "late:",
                                      replicaAcknowledgement: ReplicaAcknowledgement(replicas: 1, timeout: .seconds(600)))
        let id = SessionID.random()
        _ = try await plain.create(id, inset: 0)

        replica.signal(SIGSTOP)
        defer { replica.signal(SIGCONT) }
        // The first change runs and its WAIT holds the changes' connection
        // until the test ends it (a timeout of its own could pass while a
        // busy run holds the test up); the second, sent once that WAIT blocks
        // (a loaded machine may be slow to send the first), waits behind it
        // past its 0.3 s deadline.
        async let first = outcome { () async throws(ChromeFunctionError) in try await waiting.apply([.setInset(10)], to: id, if: .always) }
        #expect(await eventually { (try? redisCLI(port: primary.port, "INFO", "clients"))?.contains("blocked_clients:1") == true },
                "the first change's WAIT blocks")
        let second = await outcome { () async throws(ChromeFunctionError) in try await waiting.apply([.setInset(20)], to: id, if: .always) }
        #expect(second == ChromeFunctionError.redis(.timeout), "\(String(describing: second))")
        // The WAIT ends as if timed out: no replica acknowledged.
        let waiter = try redisCLI(port: primary.port, "CLIENT", "LIST").split(separator: "\n").first { $0.contains("cmd=wait") }
        let waiterID = try #require(waiter?.split(separator: " ").first?.dropFirst("id=".count), "the WAIT's client")
        #expect(try redisCLI(port: primary.port, "CLIENT", "UNBLOCK", String(waiterID), "TIMEOUT").contains("1"))
        #expect(await first == ChromeFunctionError.notReplicated(wanted: 1, acknowledged: 0))
        // The second change reached Redis once the WAIT ended, past its
        // deadline: read after Redis ran it (the create, the first, the second).
        #expect(await eventually { Self.changesRun(port: primary.port) >= 3 }, "the late change reached Redis")
        let stored = try #require(try await plain.session(id))
        #expect(stored.state.inset == 10 && stored.state.version == 2, "the late change was refused: \(stored.state)")
    }

    /// How many `FCALL`s (changes) Redis ran or refused.
    private static func changesRun(port: Int) -> Int {
        guard let stats = try? redisCLI(port: port, "INFO", "commandstats"),
              let line = stats.split(whereSeparator: \.isNewline).first(where: { $0.hasPrefix("cmdstat_fcall:") }) else { return 0 }
        return line.dropFirst("cmdstat_fcall:".count).split(separator: ",").reduce(0) { total, field in
            let pair = field.split(separator: "=")
            guard pair.count == 2, pair[0] == "calls" || pair[0] == "rejected_calls" else { return total }
            return total + (Int(pair[1]) ?? 0)
        }
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
