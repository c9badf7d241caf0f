import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One change of a session as subscribers receive it, made once however
/// many subscribe: one change may fan out to thousands of watchers.
public final class SessionChange: @unchecked Sendable {
    public let session: Session
    /// The state read again after a feed lost its source for a while, not
    /// one change: it may even be older than one already delivered, since a
    /// failover can lose the last acknowledged changes. Deliver it if its
    /// entity tag differs from the one delivered last, not only if its
    /// version is greater.
    public let isResynchronization: Bool
    private var rendered: [UInt8]?

    public init(_ session: Session, isResynchronization: Bool = false) {
        self.session = session
        self.isResynchronization = isResynchronization
    }

    /// What `render` makes of the change, made by the first subscriber that
    /// asks and reused by the others. Subscribers are told of a change one
    /// at a time, so no two threads ask at once.
    public func rendering(_ render: (Session) -> [UInt8]) -> [UInt8] {
        if let rendered { return rendered }
        let bytes = render(session)
        rendered = bytes
        return bytes
    }
}

/// Someone told of one session's changes: every change after the state
/// ``SessionChangeFeed/subscribe(_:to:)`` returned, in order, then its removal.
public protocol SessionSubscriber: AnyObject, Sendable {
    /// The session changed. Returns whether to stay subscribed. Called in
    /// order, while the feed holds the session: it must be quick and must
    /// not call back into the store.
    func sessionChanged(_ change: SessionChange) -> Bool
    /// The session is gone (deleted or expired); the subscription ends with it.
    func sessionRemoved(_ id: SessionID)
    /// The feed stopped hearing the session's changes (a remote feed lost
    /// its source): until a resynchronized change comes, the state last
    /// delivered may be stale. Returns whether to stay subscribed.
    func sessionUnheard(_ id: SessionID) -> Bool
}

extension SessionSubscriber {
    /// Most subscribers wait for the resynchronized change.
    public func sessionUnheard(_ id: SessionID) -> Bool { true }
}

/// Why a feed refused a subscription; a client can retry later.
public enum SubscriptionRefusal: Error, Hashable {
    case tooManySubscribers(limit: Int)
    case tooManyForSession(limit: Int)
}

/// A store's changes, per session, for those who watch them. The store
/// publishes and subscribers listen; the store never knows who they are.
/// The memory store publishes in-process; a networked store can publish
/// what reaches it from elsewhere (pub/sub) through the same subscriptions.
public protocol SessionChangeFeed: Sendable {
    /// Who is subscribed to which session.
    var subscriptions: SessionSubscriptions { get }

    /// Subscribes to `id` and returns the session as it is now: every change
    /// after that state reaches `subscriber`, none is missed (possibly even
    /// before this returns, on another thread). Nil, and no subscription,
    /// if there is no such session.
    func subscribe(_ subscriber: any SessionSubscriber, to id: SessionID) throws(SubscriptionRefusal) -> Session?

    /// Ends a subscription; nothing if there is none.
    func unsubscribe(_ subscriber: any SessionSubscriber, from id: SessionID)
}

extension SessionChangeFeed {
    public func unsubscribe(_ subscriber: any SessionSubscriber, from id: SessionID) {
        subscriptions.remove(subscriber, from: id)
    }
}

/// Subscribers by session, in shards with a lock each so changes to
/// different sessions do not wait for one another. A store publishes into
/// it while holding the session, which keeps each session's changes in order.
public final class SessionSubscriptions: Sendable {
    public struct Limits: Sendable, Hashable {
        public var total: Int
        public var perSession: Int

        public init(total: Int, perSession: Int) {
            self.total = total
            self.perSession = perSession
        }
    }

    public let limits: Limits
    private let shards: [Shard]
    private let total = Atomic<Int>(0)

    public init(limits: Limits = Limits(total: 10_000, perSession: 64), shardCount: Int = 64) {
        precondition(shardCount > 0 && shardCount & (shardCount - 1) == 0, "shardCount must be a power of two")
        self.limits = limits
        self.shards = (0..<shardCount).map { _ in Shard() }
    }

    /// Subscriptions held now.
    public var count: Int {
        total.load(ordering: .relaxed)
    }

    /// Changes looked up among the subscriptions. None while nobody
    /// subscribes: that is the usual case under load, and then publishing
    /// costs one atomic read.
    public var lookups: Int {
        shards.reduce(0) { sum, shard in sum + shard.withLock { $0.lookups } }
    }

    /// Registers `subscriber` for `id` (once, however often asked). A store
    /// calls this while holding the session, then reads its state: no change
    /// can fall between.
    public func add(_ subscriber: any SessionSubscriber, for id: SessionID) throws(SubscriptionRefusal) {
        guard total.add(1, ordering: .relaxed).newValue <= limits.total else {
            total.subtract(1, ordering: .relaxed)
            throw .tooManySubscribers(limit: limits.total)
        }
        let added = shard(for: id).withLock { contents -> Bool? in
            let key = ObjectIdentifier(subscriber)
            if contents.subscribers[id]?[key] != nil { return nil }
            guard contents.subscribers[id, default: [:]].count < limits.perSession else { return false }
            contents.subscribers[id, default: [:]][key] = subscriber
            return true
        }
        if added != true { total.subtract(1, ordering: .relaxed) }
        if added == false { throw .tooManyForSession(limit: limits.perSession) }
    }

    public func remove(_ subscriber: any SessionSubscriber, from id: SessionID) {
        let removed = shard(for: id).withLock { contents -> Bool in
            guard contents.subscribers[id]?.removeValue(forKey: ObjectIdentifier(subscriber)) != nil else { return false }
            if contents.subscribers[id]?.isEmpty == true { contents.subscribers[id] = nil }
            return true
        }
        if removed { total.subtract(1, ordering: .relaxed) }
    }

    /// Tells the session's subscribers of `event`. The store calls this in
    /// order for each session, while holding it.
    @inline(__always)
    public func publish(_ event: SessionEvent) {
        // Nobody subscribes at all: no shard is locked. A subscription is
        // added while the store holds the session, so no change of it is
        // missed by this.
        guard count > 0 else { return }
        deliver(event, isResynchronization: false)
    }

    /// Tells the session's subscribers of its state as read again after the
    /// feed lost its source (see ``SessionChange/isResynchronization``).
    public func publishResynchronized(_ event: SessionEvent) {
        guard count > 0 else { return }
        deliver(event, isResynchronization: true)
    }

    /// Tells the session's subscribers that its changes go unheard for now
    /// (see ``SessionSubscriber/sessionUnheard(_:)``).
    public func publishUnheard(_ id: SessionID) {
        guard count > 0 else { return }
        tell(id, countingLookup: false) { $0.sessionUnheard(id) }
    }

    /// Whether anyone subscribes to `id` now.
    public func isWatched(_ id: SessionID) -> Bool {
        shard(for: id).withLock { $0.subscribers[id] != nil }
    }

    private func deliver(_ event: SessionEvent, isResynchronization: Bool) {
        switch event {
        case let .changed(session):
            let change = SessionChange(session, isResynchronization: isResynchronization)
            tell(session.id, countingLookup: true) { $0.sessionChanged(change) }
        case let .removed(id):
            let gone = shard(for: id).withLock { contents in
                contents.lookups += 1
                return contents.subscribers.removeValue(forKey: id).map { Array($0.values) } ?? []
            }
            if !gone.isEmpty { total.subtract(gone.count, ordering: .relaxed) }
            for subscriber in gone { subscriber.sessionRemoved(id) }
        }
    }

    /// Tells each subscriber of `id`, under its shard's lock, and drops
    /// those that answer they are done.
    private func tell(_ id: SessionID, countingLookup: Bool, _ staySubscribed: (any SessionSubscriber) -> Bool) {
        let dropped = shard(for: id).withLock { contents -> Int in
            if countingLookup { contents.lookups += 1 }
            guard let current = contents.subscribers[id] else { return 0 }
            let done = current.filter { !staySubscribed($0.value) }.keys
            for key in done { contents.subscribers[id]?[key] = nil }
            if contents.subscribers[id]?.isEmpty == true { contents.subscribers[id] = nil }
            return done.count
        }
        if dropped > 0 { total.subtract(dropped, ordering: .relaxed) }
    }

    /// Every subscriber now, e.g. for a periodic heartbeat.
    public func all() -> [any SessionSubscriber] {
        shards.flatMap { shard in shard.withLock { $0.subscribers.values.flatMap(\.values) } }
    }

    /// Ends every subscription and returns the subscribers: the service is stopping.
    public func removeAll() -> [any SessionSubscriber] {
        shards.flatMap { shard in
            let subscribers = shard.withLock { contents in
                defer { contents.subscribers = [:] }
                return contents.subscribers.values.flatMap(\.values)
            }
            total.subtract(subscribers.count, ordering: .relaxed)
            return subscribers
        }
    }

    private func shard(for id: SessionID) -> Shard {
        shards[Int(truncatingIfNeeded: id.low) & (shards.count - 1)]
    }

    private struct Contents {
        var subscribers: [SessionID: [ObjectIdentifier: any SessionSubscriber]] = [:]
        var lookups = 0
    }

    /// A pthread mutex, not `Mutex`: the thread sanitizer reports false
    /// races on `Mutex` with this toolchain.
    private final class Shard: @unchecked Sendable {
        private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        private var contents = Contents()

        init() {
            mutex.initialize(to: pthread_mutex_t())
            precondition(pthread_mutex_init(mutex, nil) == 0, "pthread_mutex_init failed")
        }

        deinit {
            pthread_mutex_destroy(mutex)
            mutex.deallocate()
        }

        func withLock<Result>(_ body: (inout Contents) -> Result) -> Result {
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            return body(&contents)
        }
    }
}
