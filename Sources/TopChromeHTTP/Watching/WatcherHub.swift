import MicroHTTPD
import Synchronization
import TopChromeCore

/// One change of a session as watchers receive it. The event-stream bytes
/// are made once per change, not once per watcher: one change may fan out
/// to thousands of streams.
final class SessionChange: @unchecked Sendable {
    let session: Session

    init(_ session: Session) {
        self.session = session
    }

    /// Read only by `WatcherHub.publish`, on one thread at a time under the session's lock.
    private(set) lazy var eventBytes: [UInt8] = EventStreamWatcher.event(for: session)
}

/// Someone waiting to learn of a session's changes: an event stream or a long-poll.
protocol SessionWatcher: AnyObject, Sendable {
    /// The session changed. Returns whether the watcher wants more.
    /// Called in order, with the session still locked: must be quick.
    func deliver(_ change: SessionChange) -> Bool
    /// The session is gone (deleted or expired).
    func sessionRemoved()
    /// A periodic tick: streams send a heartbeat, so proxies keep them open
    /// and a client that left is noticed.
    func heartbeat()
    /// The server is stopping.
    func close()
}

/// Who watches which session. The store tells the hub of every change (in
/// order, per session) and the hub passes it on. Sharded like the store, so
/// changes to different sessions do not wait for one another.
final class WatcherHub: Sendable {
    struct Limits: Sendable {
        var total: Int
        var perSession: Int
    }

    enum Refusal: Error, Equatable {
        case tooManyWatchers(limit: Int)
        case tooManyForSession(limit: Int)
    }

    let limits: Limits
    private let shards: [Shard]
    private let total = Atomic<Int>(0)

    init(limits: Limits, shardCount: Int = 64) {
        self.limits = limits
        self.shards = (0..<shardCount).map { _ in Shard() }
    }

    /// Watchers registered now.
    var count: Int {
        total.load(ordering: .relaxed)
    }

    func add(_ watcher: any SessionWatcher, for id: SessionID) throws(Refusal) {
        guard total.add(1, ordering: .relaxed).newValue <= limits.total else {
            total.subtract(1, ordering: .relaxed)
            throw .tooManyWatchers(limit: limits.total)
        }
        let added = shard(for: id).withLock { watchers -> Bool in
            guard watchers[id, default: [:]].count < limits.perSession else { return false }
            watchers[id, default: [:]][ObjectIdentifier(watcher)] = watcher
            return true
        }
        guard added else {
            total.subtract(1, ordering: .relaxed)
            throw .tooManyForSession(limit: limits.perSession)
        }
    }

    func remove(_ watcher: any SessionWatcher, for id: SessionID) {
        let removed = shard(for: id).withLock { watchers -> Bool in
            guard watchers[id]?.removeValue(forKey: ObjectIdentifier(watcher)) != nil else { return false }
            if watchers[id]?.isEmpty == true { watchers[id] = nil }
            return true
        }
        if removed { total.subtract(1, ordering: .relaxed) }
    }

    /// The store's observer.
    func publish(_ event: SessionEvent) {
        // Nobody watches at all: the usual case under load, and then no shard
        // is locked. A watcher counts before it registers and then reads the
        // session under the store's shard lock, which this runs under: so it
        // misses no change by this.
        guard count > 0 else { return }
        switch event {
        case let .changed(session):
            let dropped = shard(for: session.id).withLock { watchers -> Int in
                guard let current = watchers[session.id] else { return 0 }
                let change = SessionChange(session)
                let done = current.filter { !$0.value.deliver(change) }.keys
                for key in done { watchers[session.id]?[key] = nil }
                if watchers[session.id]?.isEmpty == true { watchers[session.id] = nil }
                return done.count
            }
            if dropped > 0 { total.subtract(dropped, ordering: .relaxed) }
        case let .removed(id):
            let gone = shard(for: id).withLock { watchers in
                watchers.removeValue(forKey: id).map { Array($0.values) } ?? []
            }
            if !gone.isEmpty { total.subtract(gone.count, ordering: .relaxed) }
            for watcher in gone { watcher.sessionRemoved() }
        }
    }

    func heartbeat() {
        for shard in shards {
            let watchers = shard.withLock { $0.values.flatMap(\.values) }
            for watcher in watchers { watcher.heartbeat() }
        }
    }

    /// Ends every watch: the server is stopping.
    func closeAll() {
        for shard in shards {
            let watchers = shard.withLock { all in
                defer { all = [:] }
                return all.values.flatMap(\.values)
            }
            total.subtract(watchers.count, ordering: .relaxed)
            for watcher in watchers { watcher.close() }
        }
    }

    private func shard(for id: SessionID) -> Shard {
        shards[Int(truncatingIfNeeded: id.low) & (shards.count - 1)]
    }

    private final class Shard: @unchecked Sendable {
        private let lock = PthreadLock()
        private var watchers: [SessionID: [ObjectIdentifier: any SessionWatcher]] = [:]

        func withLock<Result>(_ body: (inout [SessionID: [ObjectIdentifier: any SessionWatcher]]) -> Result) -> Result {
            lock.lock()
            defer { lock.unlock() }
            return body(&watchers)
        }
    }
}
