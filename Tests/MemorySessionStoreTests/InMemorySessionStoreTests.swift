import Foundation
import MemorySessionStore
import Synchronization
import Testing
import TopChromeCore

/// A clock the test moves by hand.
final class ManualClock: Sendable {
    private let nanoseconds = Atomic<Int64>(0)
    func advance(by duration: Duration) {
        nanoseconds.add(Int64(duration.components.seconds) * 1_000_000_000, ordering: .relaxed)
    }
    var now: Duration { .nanoseconds(nanoseconds.load(ordering: .relaxed)) }
}

/// Collects what a subscriber is told. NSLock, not Mutex: the thread
/// sanitizer reports false races on Mutex with this toolchain.
final class Recorder: SessionSubscriber, @unchecked Sendable {
    private let lock = NSLock()
    private var events: [SessionEvent] = []
    /// Whether to stay subscribed after each change.
    private let staysSubscribed: Bool
    init(staysSubscribed: Bool = true) { self.staysSubscribed = staysSubscribed }
    func record(_ event: SessionEvent) { lock.withLock { events.append(event) } }
    func sessionChanged(_ change: SessionChange) -> Bool {
        record(.changed(change.session))
        return staysSubscribed
    }
    func sessionRemoved(_ id: SessionID) { record(.removed(id)) }
    /// Subscribes to each session; their states then.
    @discardableResult
    func subscribe(to ids: [SessionID], in feed: InMemorySessionStore) throws -> [Session?] {
        try ids.map { try feed.subscribe(self, to: $0) }
    }
    var all: [SessionEvent] { lock.withLock { events } }
    var recorded: [ChromeState] {
        all.compactMap { if case let .changed(session) = $0 { session.state } else { nil } }
    }
}

@Suite struct InMemorySessionStoreTests {
    @Test func createReadApplyRemove() throws {
        let store = InMemorySessionStore()
        let created = try store.create(inset: 59)
        #expect(created.state == ChromeState(inset: 59))
        #expect(store.session(created.id) == created)
        #expect(store.count == 1)

        let hidden = store.apply([.scroll(ScrollReport(contentOffsetY: 300))], to: created.id)
        #expect(hidden?.state.isRevealed == false)
        #expect(hidden?.state.version == 2)
        #expect(store.session(created.id)?.state == hidden?.state)

        #expect(store.remove(created.id))
        #expect(!store.remove(created.id))
        #expect(store.session(created.id) == nil)
        #expect(store.apply([.disappear], to: created.id) == nil)
        #expect(store.count == 0)
    }

    @Test func changesOnlyWhenTheConditionHolds() throws {
        let store = InMemorySessionStore()
        let id = try store.create(inset: 0).id
        let refused = store.apply([.setInset(59)], to: id, if: .oneOf(store.tags(7)))
        #expect(refused == .conditionFailed(Session(id: id, state: ChromeState(), tag: store.epoch)))
        guard case let .done(session, _) = store.apply([.setInset(59)], to: id, if: .oneOf(store.tags(1))) else {
            Issue.record("condition held but nothing was applied")
            return
        }
        #expect(session.state.inset == 59)
        #expect(store.remove(id, if: .noneOf(store.tags(2))) == .conditionFailed(session))
        #expect(store.remove(id, if: .all([.oneOf(store.tags(2)), .noneOf(store.tags(1))])) == .done(session))
        #expect(store.apply([.disappear], to: id, if: .always) == .notFound)
        #expect(store.remove(id, if: .always) == .notFound)
    }

    @Test func unknownIdIsNil() {
        let store = InMemorySessionStore()
        #expect(store.session(.random()) == nil)
        #expect(store.apply([.disappear], to: .random()) == nil)
    }

    @Test func usesItsRules() throws {
        let store = InMemorySessionStore(rules: ChromeRules(revealThreshold: 100))
        let id = try store.create(inset: 0).id
        #expect(store.apply([.scroll(ScrollReport(contentOffsetY: 80))], to: id)?.state.isRevealed == true)
    }

    @Test func refusesPastCapacity() throws {
        let store = InMemorySessionStore(capacity: 2)
        let first = try store.create(inset: 0)
        _ = try store.create(inset: 0)
        #expect(throws: SessionStoreError.full(capacity: 2)) { try store.create(inset: 0) }
        #expect(store.count == 2)
        #expect(store.remove(first.id))
        _ = try store.create(inset: 0)
        #expect(store.count == 2)
    }

    @Test func idleSessionsExpire() throws {
        let clock = ManualClock()
        let store = InMemorySessionStore(idleTimeout: .seconds(60), now: { clock.now })
        let touched = try store.create(inset: 0).id
        let idle = try store.create(inset: 0).id
        let forgotten = try store.create(inset: 0).id
        clock.advance(by: .seconds(40))
        #expect(store.apply([.disappear], to: touched) != nil)
        clock.advance(by: .seconds(40))
        #expect(store.session(touched) != nil, "touched 40 s ago")
        #expect(store.session(idle) == nil, "idle for 80 s")
        #expect(store.count == 2)
        #expect(store.removeExpired() == 1)
        #expect(store.count == 1)
        #expect(store.session(forgotten) == nil)
    }

    /// An app idle on one screen keeps watching: its session is in use.
    /// The idle time starts when the last watcher leaves.
    @Test func watchedSessionsDoNotExpire() throws {
        let clock = ManualClock()
        let store = InMemorySessionStore(idleTimeout: .seconds(60), now: { clock.now })
        let first = Recorder(), second = Recorder()
        let swept = try store.create(inset: 0).id
        let touched = try store.create(inset: 0).id
        try first.subscribe(to: [swept, touched], in: store)
        try second.subscribe(to: [swept], in: store)
        clock.advance(by: .seconds(200))
        #expect(store.removeExpired() == 0, "the sweep keeps watched sessions")
        #expect(store.session(touched) != nil, "a watched session is not dropped when touched")
        store.unsubscribe(first, from: swept)
        clock.advance(by: .seconds(200))
        #expect(store.removeExpired() == 0, "one watcher is left")
        store.unsubscribe(second, from: swept)
        clock.advance(by: .seconds(40))
        #expect(store.removeExpired() == 0, "idle for 40 s since its last watcher left")
        clock.advance(by: .seconds(40))
        #expect(store.removeExpired() == 1)
        #expect(first.all.isEmpty && second.all.isEmpty, "no watcher heard of a removal")
        #expect(store.session(touched) != nil, "still watched")
    }

    @Test func noTimeoutKeepsSessions() throws {
        let clock = ManualClock()
        let store = InMemorySessionStore(idleTimeout: nil, now: { clock.now })
        let id = try store.create(inset: 0).id
        clock.advance(by: .seconds(1_000_000))
        #expect(store.removeExpired() == 0)
        #expect(store.session(id) != nil)
    }

    /// One input on its own is applied exactly as a batch of one: same
    /// outcome, same events, same statistics, same condition check.
    @Test func oneInputIsABatchOfOne() throws {
        let inputs: [ChromeInput] = [
            .scroll(ScrollReport(contentOffsetY: 300, seq: 5)), .scroll(ScrollReport(contentOffsetY: 0, seq: 4)),
            .scroll(ScrollReport(contentOffsetY: 0, axis: .horizontal)), .setInset(59), .disappear,
            .scroll(ScrollReport(contentOffsetY: 0.5)),
        ]
        /// The outcome without the session's id: the two stores draw different ids.
        func shape(_ outcome: StoreOutcome) -> String {
            switch outcome {
            case let .done(session, _): "done \(session.state)"
            case let .conditionFailed(session): "conditionFailed \(session.state)"
            case .notFound: "notFound"
            }
        }
        let (alone, batched) = (Recorder(), Recorder())
        let aloneStore = InMemorySessionStore()
        let batchedStore = InMemorySessionStore()
        let aloneID = try aloneStore.create(inset: 0).id, batchedID = try batchedStore.create(inset: 0).id
        try alone.subscribe(to: [aloneID], in: aloneStore)
        try batched.subscribe(to: [batchedID], in: batchedStore)
        for (step, input) in inputs.enumerated() {
            let condition: VersionCondition = step == 3 ? .oneOf(aloneStore.tags(99)) : .always
            #expect(shape(aloneStore.apply(input, to: aloneID, if: condition))
                    == shape(batchedStore.apply([input], to: batchedID, if: condition)), "step \(step)")
        }
        #expect(alone.recorded == batched.recorded)
        #expect(alone.recorded.map(\.version) == [2, 3])
        for (one, batch) in [(aloneStore.statistics, batchedStore.statistics)] {
            #expect(one.reportsApplied == batch.reportsApplied && one.reportsApplied == 2)
            #expect(one.reportsIgnoredStale == batch.reportsIgnoredStale && one.reportsIgnoredStale == 1)
            #expect(one.reportsIgnoredHorizontal == batch.reportsIgnoredHorizontal && one.reportsIgnoredHorizontal == 1)
            #expect(one.revealFlips == batch.revealFlips)
        }
        #expect(aloneStore.apply(.disappear, to: SessionID(high: 1, low: 1), if: .always) == .notFound)
    }

    @Test func subscriberLearnsOfEveryChangeInOrder() throws {
        let seen = Recorder()
        let store = InMemorySessionStore()
        let id = try store.create(inset: 0).id
        try seen.subscribe(to: [id], in: store)
        _ = store.apply([.scroll(ScrollReport(contentOffsetY: 300)), .scroll(ScrollReport(contentOffsetY: 301))], to: id)
        _ = store.apply([.setInset(59), .disappear], to: id)
        let versions = seen.recorded.map(\.version)
        #expect(versions == [2, 3, 4], "no event for a report that changed nothing")
        #expect(seen.recorded.last == store.session(id)?.state)
        #expect(store.remove(id))
        #expect(seen.all.last == .removed(id))
    }

    /// Each batch sets its own inset, hides, then reveals. Applied as one
    /// unit, its three changes reach the subscriber back to back; any
    /// interleaving with another batch would split them.
    @Test func batchesAreAtomicUnderConcurrency() async throws {
        let seen = Recorder()
        let store = InMemorySessionStore()
        let id = try store.create(inset: 0).id
        try seen.subscribe(to: [id], in: store)
        let batches = 400
        await withTaskGroup(of: Void.self) { group in
            for batch in 1...batches {
                group.addTask {
                    _ = store.apply([
                        .setInset(Double(batch)),
                        .scroll(ScrollReport(contentOffsetY: 500)),
                        .scroll(ScrollReport(contentOffsetY: 0)),
                    ], to: id)
                }
            }
        }
        let states = seen.recorded
        #expect(states.count == batches * 3)
        #expect(states.map(\.version) == Array(2...UInt64(batches * 3 + 1)))
        for start in stride(from: 0, to: states.count, by: 3) {
            let group = states[start..<start + 3]
            #expect(Set(group.map(\.inset)).count == 1)
            #expect(group.map(\.isRevealed) == [true, false, true])
        }
    }

    @Test func concurrentClientsOnManySessions() async throws {
        let store = InMemorySessionStore()
        let ids = try (0..<64).map { _ in try store.create(inset: 0).id }
        await withTaskGroup(of: Void.self) { group in
            for (index, id) in ids.enumerated() {
                group.addTask {
                    for step in 0..<200 {
                        _ = store.apply([.scroll(ScrollReport(contentOffsetY: step % 2 == 0 ? 400 : 0))], to: id)
                    }
                    if index % 2 == 0 { _ = store.apply([.scroll(ScrollReport(contentOffsetY: 400))], to: id) }
                }
            }
        }
        for (index, id) in ids.enumerated() {
            let state = try #require(store.session(id)?.state)
            #expect(state.isRevealed == (index % 2 == 1))
            #expect(state.version == (index % 2 == 0 ? 202 : 201))
        }
    }
}
