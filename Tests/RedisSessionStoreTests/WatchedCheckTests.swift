import Foundation
import Redis
import RedisSessionStore
import RedisTestSupport
import Testing
import TopChromeCore

/// The periodic check of the sessions watched through a replica: one call
/// for many sessions slides their expiry and tells their tags, and only a
/// session whose state is not what its watchers were told (a message
/// missed) is read again.
struct WatchedCheckTests {
    @Test func oneCallPerManySessionsKeepsThemAliveAndCatchesAMissedChange() async throws {
        let redis = try RedisServer()
        try await check(sessions: 150, on: [redis.node], maxCommands: 5)
    }

    /// In a cluster one call takes the sessions of one slot.
    @Test func inAClusterEachCallTakesOneSlot() async throws {
        try await check(sessions: 30, on: try RedisClusterFixture.primariesOnly().seeds, maxCommands: nil)
    }

    private func check(sessions count: Int, on seeds: [RedisNode], maxCommands: Int?) async throws {
        let commands = Counter()
        var configuration = RedisConfiguration()
        configuration.setupCommands = [ChromeFunctions.loadCommand]
        // The test makes one check: a call timed out (1 s by default) would
        // leave its finds to the next periodic check, which never comes here.
        // Room for a machine loaded by the whole suite under a sanitizer.
        configuration.commandTimeout = .seconds(60)
        configuration.metrics.roundTrip = { _, _, _ in commands.increment() }
        let client = RedisClient(seeds: seeds, configuration: configuration)
        // An idle timeout far beyond how long the test may take on a loaded
        // machine (under the thread sanitizer, making 150 sessions took over
        // 100 s): else the first sessions expire before the check, and the
        // "missed change" lands on a key that is gone.
        let functions = ChromeFunctions(client: client, keyPrefix: "watched:", idleTimeout: .seconds(3600))
        let store = RedisSessionStore(functions: functions, subscriber: RedisSubscriber(client: client))
        defer { store.close() }
        #expect(await eventually { client.topology != .unknown })
        let watcher = Watcher()
        var ids: [SessionID] = []
        for _ in 0..<count {
            let id = SessionID.random()
            _ = try await functions.create(id, inset: 0)
            let started: Session? = try await withCheckedThrowingContinuation { continuation in
                do {
                    try store.subscribe(watcher, to: id) { continuation.resume(with: $0) }
                } catch {
                    continuation.resume(throwing: error)
                }
            }
            #expect(started?.state.version == 1)
            ids.append(id)
        }
        let key = { (id: SessionID) in String(decoding: functions.key(for: id), as: UTF8.self) }
        // A change whose message was lost, a session nearer its expiry than
        // the idle timeout (by minutes: a busy run may hold the test up for
        // seconds), and one gone without a word.
        _ = try await client.send(["HSET", key(ids[0]), "i", "7", "v", "2", "e", "2.0123456789ab"])
        _ = try await client.send(["PEXPIRE", key(ids[1]), "600000"])
        _ = try await client.send(["DEL", key(ids[2])])

        let before = commands.value
        store.keepWatchedSessionsAlive()
        #expect(await eventually { watcher.changes.contains { $0.id == ids[0] && $0.state.version == 2 } },
                "the missed change reached the watcher")
        #expect(await eventually { watcher.removed.contains(ids[2]) })
        // Slid from the 600 s left back to (about) the whole idle timeout.
        #expect(try await client.send(["PTTL", key(ids[1])]) .integerValue.map { $0 > 3_000_000 } == true, "a watched session is kept alive")
        // Two checks of 100 and 50 sessions, one read of the session that
        // differed, and the last use of the one gone as its watcher left.
        if let maxCommands {
            #expect(commands.value - before <= maxCommands, "\(commands.value - before) commands for \(count) watched sessions")
        }
        #expect(watcher.changes.count == 1, "only the session that differed was told: \(watcher.changes.map(\.state))")
    }
}

private final class Watcher: SessionSubscriber, @unchecked Sendable {
    private let lock = NSLock()
    private var changed: [Session] = []
    private var gone: [SessionID] = []

    var changes: [Session] { lock.withLock { changed } }
    var removed: [SessionID] { lock.withLock { gone } }

    func sessionChanged(_ change: SessionChange) -> Bool {
        lock.withLock { changed.append(change.session) }
        return true
    }

    func sessionRemoved(_ id: SessionID) {
        lock.withLock { gone.append(id) }
    }
}

private extension RESPValue {
    var integerValue: Int64? {
        if case let .integer(value) = self { value } else { nil }
    }
}
