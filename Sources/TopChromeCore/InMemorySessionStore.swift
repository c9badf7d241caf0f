import Foundation
import Synchronization

/// Sessions in memory, split into shards with a lock each, so that clients
/// of different sessions rarely wait for one another while all changes to
/// one session stay strictly ordered.
public final class InMemorySessionStore: SessionStore {
    public let rules: ChromeRules
    /// Sessions held at most.
    public let capacity: Int
    /// A session untouched this long is dropped; nil keeps sessions forever.
    /// Clients vanish without saying goodbye; their sessions must not pile up.
    public let idleTimeout: Duration?

    private let shards: [Shard]
    private let held = Atomic<Int>(0)
    private let now: @Sendable () -> Duration
    private let observer: (@Sendable (SessionEvent) -> Void)?
    /// What the rules did, counted as inputs are applied.
    public let statistics = ChromeStatistics()

    /// - Parameters:
    ///   - now: a monotonic clock, for idle expiry; tests pass their own.
    ///   - observer: told of every change of a session's chrome (a new
    ///     version) and of its removal, in order, while that session is
    ///     still locked. It must be quick and must not call back into the store.
    public init(
        rules: ChromeRules = ChromeRules(),
        capacity: Int = 1_000_000,
        idleTimeout: Duration? = .seconds(3600),
        shardCount: Int = 64,
        now: @escaping @Sendable () -> Duration = InMemorySessionStore.uptime,
        observer: (@Sendable (SessionEvent) -> Void)? = nil
    ) {
        precondition(shardCount > 0 && shardCount & (shardCount - 1) == 0, "shardCount must be a power of two")
        self.rules = rules
        self.capacity = capacity
        self.idleTimeout = idleTimeout
        self.shards = (0..<shardCount).map { _ in Shard() }
        self.now = now
        self.observer = observer
    }

    /// Time since the process started, on a clock that never goes back.
    public static let uptime: @Sendable () -> Duration = {
        let start = ContinuousClock.now
        return { ContinuousClock.now - start }
    }()

    public var count: Int {
        held.load(ordering: .relaxed)
    }

    public func create(inset: Double) throws(SessionStoreError) -> Session {
        guard held.add(1, ordering: .relaxed).newValue <= capacity else {
            held.subtract(1, ordering: .relaxed)
            throw .full(capacity: capacity)
        }
        let state = ChromeState(inset: inset)
        let time = now()
        while true {
            let id = SessionID.random()
            let inserted = shard(for: id).withLock { sessions in
                guard sessions[id] == nil else { return false }
                sessions[id] = Entry(state: state, lastUsed: time)
                return true
            }
            // A repeat of 128 random bits is next to impossible; draw again if it happens.
            if inserted { return Session(id: id, state: state) }
        }
    }

    public func session(_ id: SessionID) -> Session? {
        apply([], to: id)
    }

    public func apply(_ inputs: [ChromeInput], to id: SessionID, if condition: VersionCondition) -> StoreOutcome {
        let time = now()
        return shard(for: id).withLock { sessions -> StoreOutcome in
            guard var entry = liveEntry(id, in: &sessions, at: time) else { return .notFound }
            guard condition.holds(for: entry.state.version) else {
                return .conditionFailed(Session(id: id, state: entry.state))
            }
            for input in inputs {
                let (next, outcome) = rules.step(input, from: entry.state)
                statistics.record(outcome, flipped: next.isRevealed != entry.state.isRevealed)
                let changed = next.version != entry.state.version
                entry.state = next
                if changed { observer?(.changed(Session(id: id, state: next))) }
            }
            entry.lastUsed = time
            sessions[id] = entry
            return .done(Session(id: id, state: entry.state))
        }
    }

    public func remove(_ id: SessionID, if condition: VersionCondition) -> StoreOutcome {
        let time = now()
        return shard(for: id).withLock { sessions -> StoreOutcome in
            guard let entry = liveEntry(id, in: &sessions, at: time) else { return .notFound }
            let session = Session(id: id, state: entry.state)
            guard condition.holds(for: entry.state.version) else { return .conditionFailed(session) }
            sessions[id] = nil
            held.subtract(1, ordering: .relaxed)
            observer?(.removed(id))
            return .done(session)
        }
    }

    /// The entry, unless it is missing or has expired (then it is dropped here).
    private func liveEntry(_ id: SessionID, in sessions: inout [SessionID: Entry], at time: Duration) -> Entry? {
        guard let entry = sessions[id] else { return nil }
        guard !isExpired(entry, at: time) else {
            sessions[id] = nil
            held.subtract(1, ordering: .relaxed)
            observer?(.removed(id))
            return nil
        }
        return entry
    }

    /// Every session as it is now (each shard read under its lock), for a snapshot.
    public func snapshot() -> [Session] {
        shards.flatMap { shard in
            shard.withLock { sessions in sessions.map { Session(id: $0.key, state: $0.value.state) } }
        }
    }

    /// Puts sessions back as they were, e.g. from a snapshot at start; they
    /// count as used now. Throws `.full` if they do not fit.
    public func restore(_ restored: [Session]) throws(SessionStoreError) {
        guard held.load(ordering: .relaxed) + restored.count <= capacity else { throw .full(capacity: capacity) }
        let time = now()
        for session in restored {
            let isNew = shard(for: session.id).withLock { sessions in
                sessions.updateValue(Entry(state: session.state, lastUsed: time), forKey: session.id) == nil
            }
            if isNew { held.add(1, ordering: .relaxed) }
        }
    }

    /// Drops every session idle for longer than `idleTimeout`; returns how many.
    /// Expired sessions also vanish when touched; this frees the ones nobody touches.
    @discardableResult
    public func removeExpired() -> Int {
        guard idleTimeout != nil else { return 0 }
        let time = now()
        var removed = 0
        for shard in shards {
            let dropped = shard.withLock { sessions in
                let expired = sessions.filter { isExpired($0.value, at: time) }.keys
                for id in expired {
                    sessions[id] = nil
                    observer?(.removed(id))
                }
                return expired.count
            }
            removed += dropped
        }
        if removed > 0 { held.subtract(removed, ordering: .relaxed) }
        return removed
    }

    private func isExpired(_ entry: Entry, at time: Duration) -> Bool {
        guard let idleTimeout else { return false }
        return time - entry.lastUsed > idleTimeout
    }

    private func shard(for id: SessionID) -> Shard {
        // Ids are uniformly random, so their low bits spread sessions evenly.
        shards[Int(truncatingIfNeeded: id.low) & (shards.count - 1)]
    }
}

private struct Entry {
    var state: ChromeState
    var lastUsed: Duration
}

/// One lock and the sessions it guards. `NSLock` rather than `Mutex`: the
/// thread sanitizer reports false races on `Mutex` with this toolchain.
private final class Shard: @unchecked Sendable {
    private let lock = NSLock()
    private var sessions: [SessionID: Entry] = [:]

    func withLock<Result>(_ body: (inout [SessionID: Entry]) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&sessions)
    }
}
