import Redis
import RedisSessionStore
import RedisTestSupport
import Testing
import TopChromeCore
import TopChromeTesting

/// The Redis feed tells watchers after its lock is released, as the memory
/// store does: a watcher may leave while it is told, and one that takes its
/// time holds up no other watcher's coming and going.
@Suite(.timeLimit(.minutes(10))) struct FeedDeliveryTests {
    @Test func aWatcherMayLeaveWhileItIsTold() async throws {
        let redis = try RedisServer()
        let (store, functions) = Self.store(on: redis)
        defer { store.close() }
        let id = SessionID.random()
        _ = try await functions.create(id, inset: 0)
        let leaving = LeavesWhenTold(feed: store)
        #expect(try await Self.firstState(of: id, for: leaving, in: store)?.state.version == 1)

        _ = try await functions.apply([.setInset(10)], to: id, if: .always)
        #expect(eventually { leaving.changesTold == 1 && store.subscriberCount == 0 }, "told once, and gone")
        // The feed still serves: a new watcher joins and hears the next change.
        let staying = LeavesWhenTold(feed: store)
        #expect(try await Self.firstState(of: id, for: staying, in: store)?.state.version == 2)
        _ = try await functions.apply([.setInset(20)], to: id, if: .always)
        #expect(eventually { staying.changesTold == 1 })
        #expect(leaving.changesTold == 1, "gone after it left")
    }

    @Test func aWatcherTakingItsTimeHoldsUpNoOneJoiningOrLeaving() async throws {
        let redis = try RedisServer()
        let (store, functions) = Self.store(on: redis)
        defer { store.close() }
        let id = SessionID.random()
        _ = try await functions.create(id, inset: 0)
        let slow = HeldWhenTold()
        _ = try await Self.firstState(of: id, for: slow, in: store)

        _ = try await functions.apply([.setInset(10)], to: id, if: .always)
        #expect(slow.waitUntilTold(), "the slow watcher is being told")
        defer { slow.release() }
        // Joining reads the session and takes the feed's lock; leaving takes it too.
        let joining = LeavesWhenTold(feed: store)
        #expect(try await Self.firstState(of: id, for: joining, in: store)?.state.version == 2)
        #expect(store.subscriberCount == 2)
        store.unsubscribe(joining, from: id)
        #expect(store.subscriberCount == 1)
    }

    private static func store(on redis: RedisServer) -> (RedisSessionStore, ChromeFunctions) {
        var configuration = RedisConfiguration()
        configuration.setupCommands = [ChromeFunctions.loadCommand]
        let client = RedisClient(seeds: [redis.node], configuration: configuration)
        let functions = ChromeFunctions(client: client, keyPrefix: "delivery:")
        return (RedisSessionStore(functions: functions, subscriber: RedisSubscriber(client: client)), functions)
    }

    private static func firstState(of id: SessionID, for subscriber: any SessionSubscriber,
                                   in store: RedisSessionStore) async throws -> Session? {
        try await withCheckedThrowingContinuation { continuation in
            do {
                try store.subscribe(subscriber, to: id) { continuation.resume(with: $0) }
            } catch {
                continuation.resume(throwing: error)
            }
        }
    }
}
