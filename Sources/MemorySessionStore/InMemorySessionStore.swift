import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import RuleStatistics
import SessionWatching
import TopChromeCore

/// Sessions in memory, split into shards with a lock each, so that clients
/// of different sessions rarely wait for one another while all changes to
/// one session stay strictly ordered.
///
/// Each shard keeps its sessions in a `SessionTable` of 56-byte slots (about
/// 120 bytes per session at a million), with the last use packed beside the
/// version (see `IdleClock` for what that implies for `removeExpired()`).
/// States a slot cannot hold — a version of 2^40 or more, a seq of
/// `UInt64.max`, the id 0/0 — are kept aside in a dictionary; only restored
/// or hand-made states are like that.
public final class InMemorySessionStore: SessionStore, FeedOverSubscriptions {
    public let rules: ChromeRules
    /// Sessions held at most.
    public let capacity: Int
    /// A session untouched this long is dropped; nil keeps sessions forever.
    /// Clients vanish without saying goodbye; their sessions must not pile up.
    /// A watched session is in use however long nobody changes it (an app
    /// idle on one screen): it does not expire, and its idle time starts
    /// when its last watcher leaves.
    public let idleTimeout: Duration?

    private let shards: Shards
    private let held = Atomic<Int>(0)
    private let now: @Sendable () -> Duration
    /// Nil when sessions never expire: then the clock is not even read.
    private let idleClock: IdleClock?
    /// Told of every change of a session's chrome (a new version) and of its
    /// removal, in order: who hears of it is settled while the session is
    /// locked, and they hear of it after it is released.
    public let subscriptions: SessionSubscriptions
    /// What the rules did, counted as inputs are applied.
    public let statistics = ChromeStatistics()
    /// The tag of every state this store holds, drawn at its start: one per
    /// store costs no memory per session, and a restart, whose state file may
    /// be older than what clients saw, then renames every state (clients
    /// read again) rather than name two states alike.
    public let epoch: StateTag
    /// Whether changes are listed for a journal (``takeChanges()``): with a
    /// state file. Listing is a mark in the session's slot and, the first
    /// time in a flush, its id on the shard's list, under the lock the
    /// change holds anyway; the journal's I/O happens off the request path.
    public let journaled: Bool
    /// Waited on after each change before it is answered, when every
    /// change must be on disk first (`--fsync always`).
    private let barrier: ChangeBarrier?

    /// - Parameters:
    ///   - idleTimeout: any length; past ≈ 56 days expiry gets coarser than
    ///     a second (see `IdleClock`).
    ///   - now: a monotonic clock, for idle expiry; tests pass their own.
    ///   - subscriptions: who watches which session, and how many may.
    ///   - epoch: fresh for every store but in tests.
    ///   - journaled: list changes for ``takeChanges()``.
    ///   - barrier: what to wait on after a change, before answering it.
    public init(
        rules: ChromeRules = ChromeRules(),
        capacity: Int = 1_000_000,
        idleTimeout: Duration? = .seconds(3600),
        shardCount: Int = 64,
        now: @escaping @Sendable () -> Duration = InMemorySessionStore.uptime,
        subscriptions: SessionSubscriptions = SessionSubscriptions(),
        epoch: StateTag = .random(),
        journaled: Bool = false,
        barrier: ChangeBarrier? = nil
    ) {
        precondition(shardCount > 0 && shardCount & (shardCount - 1) == 0, "shardCount must be a power of two")
        self.rules = rules
        self.capacity = capacity
        self.idleTimeout = idleTimeout
        self.idleClock = idleTimeout.map(IdleClock.init)
        self.shards = Shards(count: shardCount)
        self.now = now
        self.subscriptions = subscriptions
        self.epoch = epoch
        self.journaled = journaled
        self.barrier = barrier
    }

    /// Time since the process started, on a clock that never goes back.
    /// On Linux the coarse monotonic clock (a few milliseconds' resolution):
    /// it is read on every request, and a precise read costs 20–40 ns here,
    /// as much as the rest of applying a report; expiry needs no better.
    public static let uptime: @Sendable () -> Duration = {
        #if os(Linux)
        var start = timespec()
        clock_gettime(CLOCK_MONOTONIC_COARSE, &start)
        return { [start] in
            var time = timespec()
            clock_gettime(CLOCK_MONOTONIC_COARSE, &time)
            return Duration(
                secondsComponent: Int64(time.tv_sec - start.tv_sec),
                attosecondsComponent: Int64(time.tv_nsec - start.tv_nsec) * 1_000_000_000)
        }
        #else
        let start = ContinuousClock.now
        return { ContinuousClock.now - start }
        #endif
    }()

    public var count: Int {
        held.load(ordering: .relaxed)
    }

    public func create(inset: Double, settings: RevealSettings = RevealSettings()) throws(SessionStoreError) -> Session {
        guard held.add(1, ordering: .relaxed).newValue <= capacity else {
            held.subtract(1, ordering: .relaxed)
            throw .full(capacity: capacity)
        }
        let state = ChromeState(inset: inset, settings: settings)
        let tick = currentTick()
        while true {
            let id = SessionID.random()
            // 0/0 marks empty slots. It, like a repeat of 128 random bits, is
            // next to impossible; draw again if it happens.
            if id.high | id.low == 0 { continue }
            let inserted = shard(for: id).withLock { sessions in
                guard sessions.place(of: id) == nil else { return false }
                var slot = SessionSlot(id: id, state: state, lastUsed: tick)
                if journaled {
                    _ = slot.markChanged()
                    sessions.changed.append(id)
                }
                sessions.table.insert(slot)
                return true
            }
            if inserted {
                barrier?.wait()
                return Session(id: id, state: state, tag: epoch)
            }
        }
    }

    /// A read refreshes the session's idle time but writes no state: the
    /// cheapest answer the API gives, and the most frequent after reports.
    public func session(_ id: SessionID) -> Session? {
        let tick = currentTick()
        let shard = shard(for: id)
        let (session, delivers) = shard.withLock { sessions -> (Session?, Bool) in
            // Finding it expired removes it, and its watchers hear of that.
            guard let place = livePlace(of: id, in: &sessions, at: tick) else {
                return (nil, sessions.outbox.takeBaton())
            }
            sessions.touch(at: place, id, lastUsed: tick)
            return (Session(id: id, state: sessions.state(at: place, id), tag: epoch), false)
        }
        if delivers { deliverCollected(in: shard) }
        return session
    }

    public func apply(_ inputs: [ChromeInput], to id: SessionID, if condition: VersionCondition) -> StoreOutcome {
        applying(inputs, to: id, if: condition)
    }

    public func apply(_ input: ChromeInput, to id: SessionID, if condition: VersionCondition) -> StoreOutcome {
        applying(CollectionOfOne(input), to: id, if: condition)
    }

    private func applying(_ inputs: some Collection<ChromeInput>, to id: SessionID,
                          if condition: VersionCondition) -> StoreOutcome {
        let tick = currentTick()
        let shard = shard(for: id)
        let (outcome, delivers) = shard.withLock { sessions -> (StoreOutcome, Bool) in
            guard let place = livePlace(of: id, in: &sessions, at: tick) else {
                return (.notFound, sessions.outbox.takeBaton())
            }
            var state = sessions.state(at: place, id)
            guard allows(condition, state.version) else {
                return (.conditionFailed(Session(id: id, state: state, tag: epoch)), false)
            }
            var stale = 0
            for input in inputs {
                let (next, outcome) = rules.step(input, from: state)
                statistics.record(outcome, flipped: next.isRevealed != state.isRevealed)
                if outcome == .stale { stale += 1 }
                let changed = next.version != state.version
                state = next
                if changed { sessions.outbox.add(subscriptions.collect(.changed(Session(id: id, state: next, tag: epoch)))) }
            }
            sessions.set(state, lastUsed: tick, at: place, id, noting: journaled)
            return (.done(Session(id: id, state: state, tag: epoch), staleReports: stale), sessions.outbox.takeBaton())
        }
        if delivers { deliverCollected(in: shard) }
        if let barrier, case .done = outcome { barrier.wait() }
        return outcome
    }

    /// Tells watchers of the changes collected in the shard, for the thread
    /// that took the outbox's baton, with the shard unlocked.
    @inline(never)
    private func deliverCollected(in shard: Shard) {
        subscriptions.deliver(batchesFrom: { shard.withLock { $0.outbox.nextBatch() } })
    }

    public func remove(_ id: SessionID, if condition: VersionCondition) -> StoreOutcome {
        let tick = currentTick()
        let shard = shard(for: id)
        let (outcome, delivers) = shard.withLock { sessions -> (StoreOutcome, Bool) in
            guard let place = livePlace(of: id, in: &sessions, at: tick) else {
                return (.notFound, sessions.outbox.takeBaton())
            }
            let session = Session(id: id, state: sessions.state(at: place, id), tag: epoch)
            guard allows(condition, session.state.version) else { return (.conditionFailed(session), false) }
            sessions.remove(at: place, id)
            held.subtract(1, ordering: .relaxed)
            if journaled { sessions.changed.append(id) }
            sessions.outbox.add(subscriptions.collect(.removed(id)))
            return (.done(session), sessions.outbox.takeBaton())
        }
        if delivers { deliverCollected(in: shard) }
        if let barrier, case .done = outcome { barrier.wait() }
        return outcome
    }

    public func subscribe(_ subscriber: any SessionSubscriber, to id: SessionID) throws(SubscriptionRefusal) -> Session? {
        let tick = currentTick()
        // Registered and read under the session's lock: the next change
        // published is the first after the state returned.
        let shard = shard(for: id)
        let (subscribed, delivers) = shard.withLock { sessions -> (Result<Session?, SubscriptionRefusal>, Bool) in
            guard let place = livePlace(of: id, in: &sessions, at: tick) else {
                return (.success(nil), sessions.outbox.takeBaton())
            }
            do throws(SubscriptionRefusal) {
                try subscriptions.add(subscriber, for: id)
            } catch {
                return (.failure(error), false)
            }
            let state = sessions.state(at: place, id)
            sessions.set(state, lastUsed: tick, at: place, id)
            return (.success(Session(id: id, state: state, tag: epoch)), false)
        }
        if delivers { deliverCollected(in: shard) }
        return try subscribed.get()
    }

    /// Ends a subscription. The session's idle time starts again now: an app
    /// that watched one screen for longer than the idle timeout must not
    /// lose its session the moment it stops watching.
    public func unsubscribe(_ subscriber: any SessionSubscriber, from id: SessionID) {
        let tick = currentTick()
        // Under the session's lock: no sweep can find it unwatched and
        // expired between the removal and the new idle start.
        shard(for: id).withLock { sessions in
            subscriptions.remove(subscriber, from: id)
            guard idleClock != nil, let place = sessions.place(of: id) else { return }
            sessions.set(sessions.state(at: place, id), lastUsed: tick, at: place, id)
        }
    }

    /// Where the session is, unless it is missing or has expired (then it is
    /// dropped here, and its removal waits in the outbox).
    @inline(__always)
    private func livePlace(of id: SessionID, in sessions: inout ShardSessions, at tick: UInt64) -> Place? {
        guard let place = sessions.place(of: id) else { return nil }
        guard let idleClock, idleClock.isExpired(lastUsed: sessions.lastUsed(at: place, id), now: tick),
              !subscriptions.isWatched(id) else {
            return place
        }
        sessions.remove(at: place, id)
        held.subtract(1, ordering: .relaxed)
        if journaled { sessions.changed.append(id) }
        sessions.outbox.add(subscriptions.collect(.removed(id)))
        return nil
    }

    /// Every session as it is now (each shard read under its lock), for a snapshot.
    public func snapshot() -> [Session] {
        var sessions: [Session] = []
        sessions.reserveCapacity(count)
        for index in 0..<shards.count {
            shards[index].withLock { contents in
                contents.table.forEach { sessions.append(Session(id: $0.id, state: $0.state, tag: epoch)) }
                for (id, entry) in contents.aside { sessions.append(Session(id: id, state: entry.state, tag: epoch)) }
            }
        }
        return sessions
    }

    /// The sessions changed or removed since the last call, each once with
    /// its state now (nil: removed), for the journal. Each shard is taken
    /// under its lock, so a change is either taken now or listed for the
    /// next call, never lost between.
    public func takeChanges(into records: inout [(id: SessionID, state: ChromeState?)]) {
        for index in 0..<shards.count {
            shards[index].withLock { $0.takeChanged(into: &records) }
        }
    }

    /// ``takeChanges(into:)`` into a new array.
    public func takeChanges() -> [(id: SessionID, state: ChromeState?)] {
        var records: [(id: SessionID, state: ChromeState?)] = []
        takeChanges(into: &records)
        return records
    }

    /// Sessions listed as changed and not yet taken (an overcount by the
    /// odd session listed twice), for `/metrics`.
    public var changesNotTaken: Int {
        var count = 0
        for index in 0..<shards.count { count += shards[index].withLock { $0.changed.count } }
        return count
    }

    /// Puts sessions back as they were, e.g. from a snapshot at start; they
    /// count as used now, and carry this store's epoch whatever tag they
    /// came with. For a store that has served no one yet: a restored state
    /// may reuse a version a client saw with another state of this epoch. Throws `.full` if they do not fit.
    public func restore(_ restored: [Session]) throws(SessionStoreError) {
        guard held.load(ordering: .relaxed) + restored.count <= capacity else { throw .full(capacity: capacity) }
        let tick = currentTick()
        for session in restored {
            let isNew = shard(for: session.id).withLock { sessions in
                let place = sessions.place(of: session.id)
                if let place { sessions.remove(at: place, session.id) }
                sessions.insert(session.id, session.state, lastUsed: tick)
                return place == nil
            }
            if isNew { held.add(1, ordering: .relaxed) }
        }
    }

    /// Drops every session idle for longer than `idleTimeout`; returns how many.
    /// Expired sessions also vanish when touched; this frees the ones nobody touches.
    /// Run it at least every 56 days (see `IdleClock`); the service does so every minute.
    @discardableResult
    public func removeExpired() -> Int {
        guard let idleClock else { return 0 }
        let tick = currentTick()
        var removed = 0
        for index in 0..<shards.count {
            let shard = shards[index]
            let (dropped, delivers) = shard.withLock { sessions -> (Int, Bool) in
                var dropped = 0
                var removals: [ChangeDelivery] = []
                sessions.table.removeAll { slot in
                    guard idleClock.isExpired(lastUsed: slot.lastUsed, now: tick), !subscriptions.isWatched(slot.id) else {
                        return false
                    }
                    if let removal = subscriptions.collect(.removed(slot.id)) { removals.append(removal) }
                    if journaled { sessions.changed.append(slot.id) }
                    dropped += 1
                    return true
                }
                for removal in removals { sessions.outbox.add(removal) }
                if !sessions.aside.isEmpty {
                    let expired = sessions.aside.filter {
                        idleClock.isExpired(lastUsed: $0.value.lastUsed, now: tick) && !subscriptions.isWatched($0.key)
                    }.keys
                    for id in expired {
                        sessions.aside[id] = nil
                        if journaled { sessions.changed.append(id) }
                        sessions.outbox.add(subscriptions.collect(.removed(id)))
                    }
                    dropped += expired.count
                }
                return (dropped, sessions.outbox.takeBaton())
            }
            if delivers { deliverCollected(in: shard) }
            removed += dropped
        }
        if removed > 0 { held.subtract(removed, ordering: .relaxed) }
        return removed
    }

    /// Now on the idle clock; 0 (without reading the clock) if nothing expires.
    @inline(__always)
    private func currentTick() -> UInt64 {
        guard let idleClock else { return 0 }
        return idleClock.tick(at: now())
    }

    @inline(__always)
    private func shard(for id: SessionID) -> Shard {
        // Ids are uniformly random, so their low bits spread sessions evenly.
        // (The table within a shard uses the low bits of `high`.)
        shards[Int(truncatingIfNeeded: id.low) & (shards.count - 1)]
    }

    /// `condition.holds(for:)`, with the everyday case decided inline.
    @inline(__always)
    private func allows(_ condition: VersionCondition, _ version: UInt64) -> Bool {
        if case .always = condition { return true }
        return condition.holds(for: EntityTag(version: version, tag: epoch))
    }
}
