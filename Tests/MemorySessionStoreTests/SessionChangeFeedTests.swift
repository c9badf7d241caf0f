import Foundation
import MemorySessionStore
import SessionWatching
import Testing
import TopChromeCore
import TopChromeTesting

/// The in-memory store's change feed: what a watcher of one session is told.
@Suite struct SessionChangeFeedTests {
    private let down = ChromeInput.scroll(ScrollReport(contentOffsetY: 400))
    private let top = ChromeInput.scroll(ScrollReport(contentOffsetY: 0))

    @Test func subscribingGivesTheStateThenEveryChangeInOrder() throws {
        let store = InMemorySessionStore()
        let id = try store.create(inset: 0).id
        _ = store.apply([down, top], to: id)
        let seen = Recorder()
        let current = try store.subscribe(seen, to: id)
        #expect(current == store.session(id))
        #expect(current?.state.version == 3)
        #expect(seen.all.isEmpty, "nothing before the state returned")
        _ = store.apply([down, .setInset(20), top], to: id)
        _ = store.apply([down], to: id)
        _ = store.apply([.scroll(ScrollReport(contentOffsetY: 500))], to: id)  // changes nothing
        #expect(seen.recorded.map(\.version) == [4, 5, 6, 7])
        #expect(seen.recorded.last == store.session(id)?.state)
    }

    @Test func removalEndsTheSubscription() throws {
        let clock = ManualClock()
        let store = InMemorySessionStore(idleTimeout: .seconds(60), now: { clock.now })
        let (deleted, expired) = (try store.create(inset: 0).id, try store.create(inset: 0).id)
        let seen = Recorder()
        try seen.subscribe(to: [deleted, expired], in: store)
        #expect(store.subscriptions.count == 2)
        #expect(store.remove(deleted))
        #expect(seen.all == [.removed(deleted)])
        #expect(store.subscriptions.count == 1)
        // A watched session does not expire; once unwatched it does, and
        // the subscription is gone with the watcher, not with the session.
        clock.advance(by: .seconds(120))
        #expect(store.removeExpired() == 0)
        store.unsubscribe(seen, from: expired)
        #expect(store.subscriptions.count == 0)
        clock.advance(by: .seconds(120))
        #expect(store.removeExpired() == 1)
        #expect(seen.all == [.removed(deleted)])
    }

    /// Watchers are told after the shard's lock is released, so one may
    /// leave while it is told.
    @Test func aWatcherMayLeaveWhileItIsTold() throws {
        let store = InMemorySessionStore()
        let id = try store.create(inset: 0).id
        let leaving = LeavesWhenTold(feed: store)
        _ = try store.subscribe(leaving, to: id)
        _ = store.apply([down], to: id)
        #expect(leaving.changesTold == 1)
        #expect(store.subscriberCount == 0)
        _ = store.apply([top], to: id)
        #expect(leaving.changesTold == 1, "gone after it left")
    }

    @Test func unknownSessionsAreNotSubscribed() throws {
        let store = InMemorySessionStore()
        #expect(try store.subscribe(Recorder(), to: .random()) == nil)
        #expect(store.subscriptions.count == 0)
    }

    @Test func unsubscribingStopsDelivery() throws {
        let store = InMemorySessionStore()
        let id = try store.create(inset: 0).id
        let (leaving, staying) = (Recorder(), Recorder())
        try leaving.subscribe(to: [id], in: store)
        try staying.subscribe(to: [id], in: store)
        _ = store.apply([down], to: id)
        store.unsubscribe(leaving, from: id)
        _ = store.apply([top], to: id)
        #expect(store.remove(id))
        #expect(leaving.recorded.map(\.version) == [2])
        #expect(staying.all == [.changed(Session(id: id, state: ChromeState(inset: 0, isRevealed: false, version: 2, lastAppliedSeq: nil), tag: store.epoch)),
                                .changed(Session(id: id, state: ChromeState(inset: 0, isRevealed: true, version: 3, lastAppliedSeq: nil), tag: store.epoch)),
                                .removed(id)])
        #expect(store.subscriptions.count == 0)
    }

    @Test func aSubscriberThatWantsNoMoreIsDropped() throws {
        let store = InMemorySessionStore()
        let id = try store.create(inset: 0).id
        let once = Recorder(staysSubscribed: false)
        try once.subscribe(to: [id], in: store)
        _ = store.apply([down], to: id)
        _ = store.apply([top], to: id)
        #expect(once.recorded.map(\.version) == [2])
        #expect(store.subscriptions.count == 0)
    }

    /// The store's hot path: while nobody subscribes, a change looks nothing up.
    @Test func nobodySubscribedMeansNoLookups() throws {
        let clock = ManualClock()
        let store = InMemorySessionStore(idleTimeout: .seconds(60), now: { clock.now })
        let ids = try (0..<8).map { _ in try store.create(inset: 0).id }
        for id in ids { _ = store.apply([down, top, .setInset(3)], to: id) }
        #expect(store.remove(ids[0]))
        clock.advance(by: .seconds(120))
        #expect(store.removeExpired() == 7)
        #expect(store.subscriptions.lookups == 0)

        let watched = try store.create(inset: 0).id, unwatched = try store.create(inset: 0).id
        try Recorder().subscribe(to: [watched], in: store)
        _ = store.apply([down], to: unwatched)
        #expect(store.subscriptions.lookups == 1, "with a subscriber somewhere, every change is looked up")
    }

    @Test func limitsRefuseAndLeaveNothingBehind() throws {
        let store = InMemorySessionStore(subscriptions: SessionSubscriptions(limits: .init(total: 3, perSession: 2)))
        let (first, second) = (try store.create(inset: 0).id, try store.create(inset: 0).id)
        let twice = Recorder()
        try twice.subscribe(to: [first, first], in: store)
        #expect(store.subscriptions.count == 1, "one subscription, however often asked")
        try Recorder().subscribe(to: [first], in: store)
        #expect(throws: SubscriptionRefusal.tooManyForSession(limit: 2)) { try store.subscribe(Recorder(), to: first) }
        try Recorder().subscribe(to: [second], in: store)
        #expect(throws: SubscriptionRefusal.tooManySubscribers(limit: 3)) { try store.subscribe(Recorder(), to: second) }
        #expect(store.subscriptions.count == 3)
        #expect(store.remove(first))
        #expect(store.subscriptions.count == 1)
    }

    /// Subscribing while others change the session: the changes received
    /// continue exactly from the state returned, with no gap and no repeat.
    @Test func noGapWhileTheSessionChanges() async throws {
        let store = InMemorySessionStore()
        let id = try store.create(inset: 0).id
        let subscribers = (0..<50).map { _ in Recorder() }
        let starts = await withTaskGroup(of: (Int, UInt64?).self) { group in
            group.addTask {
                for step in 0..<2000 { _ = store.apply([step % 2 == 0 ? self.down : self.top], to: id) }
                return (-1, nil)
            }
            for (index, subscriber) in subscribers.enumerated() {
                group.addTask { (index, try? store.subscribe(subscriber, to: id)?.state.version) }
            }
            var starts: [Int: UInt64] = [:]
            for await (index, version) in group where index >= 0 { starts[index] = version }
            return starts
        }
        let last = try #require(store.session(id)?.state.version)
        for (index, subscriber) in subscribers.enumerated() {
            let start = try #require(starts[index])
            #expect(subscriber.recorded.map(\.version) == Array(start..<last).map { $0 + 1 })
        }
    }

    @Test func aChangeIsRenderedOnceForAllSubscribers() throws {
        let store = InMemorySessionStore()
        let id = try store.create(inset: 0).id
        let renders = Renders()
        let subscribers = (0..<5).map { _ in Rendering(renders) }
        for subscriber in subscribers { _ = try store.subscribe(subscriber, to: id) }
        _ = store.apply([down], to: id)
        #expect(renders.count == 1)
        #expect(subscribers.allSatisfy { $0.bytes == [2] })
    }
}

private final class Renders: @unchecked Sendable {
    private let lock = NSLock()
    private var made = 0
    func made(_ session: Session) -> [UInt8] {
        lock.withLock { made += 1 }
        return [UInt8(session.state.version)]
    }
    var count: Int { lock.withLock { made } }
}

private final class Rendering: SessionSubscriber, @unchecked Sendable {
    private let renders: Renders
    private let lock = NSLock()
    private var received: [UInt8] = []
    init(_ renders: Renders) { self.renders = renders }
    func sessionChanged(_ change: SessionChange) -> Bool {
        let bytes = change.rendering(renders.made)
        lock.withLock { received = bytes }
        return true
    }
    func sessionRemoved(_ id: SessionID) {}
    var bytes: [UInt8] { lock.withLock { received } }
}
