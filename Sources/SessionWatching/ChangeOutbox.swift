import TopChromeCore

/// Changes collected under a lock, to be delivered after it is released,
/// in the order collected: no watcher runs under a store's lock, so a slow
/// one holds up no writer of other sessions and one may unsubscribe while
/// it is told of a change. Lives beside what the lock guards (a memory
/// store's shard, the Redis feed's channels), and is only touched under it.
///
/// Two threads that collect in turn unlock in either order, so whoever
/// finds nobody delivering takes the baton and delivers until the outbox
/// is empty; the others only add. One thread at a time delivers, so each
/// session's changes reach its subscribers in order, and a writer never
/// waits for a watcher unless it holds the baton.
public struct ChangeOutbox: Sendable {
    // Inlinable, with what they touch: a memory store's writer adds and
    // takes the baton on every report.
    @usableFromInline var waiting: [ChangeDelivery] = []
    @usableFromInline var isDelivering = false

    public init() {}

    /// Under the lock.
    @inlinable @inline(__always)
    public mutating func add(_ delivery: ChangeDelivery?) {
        if let delivery { waiting.append(delivery) }
    }

    /// Under the lock, last: whether this thread is to deliver (then it
    /// calls ``nextBatch()`` under the lock until that returns nil).
    @inlinable @inline(__always)
    public mutating func takeBaton() -> Bool {
        guard !isDelivering, !waiting.isEmpty else { return false }
        isDelivering = true
        return true
    }

    /// Under the lock, by the baton's holder: what to deliver next, or nil
    /// when all is delivered (and the baton is given back).
    @inlinable
    public mutating func nextBatch() -> [ChangeDelivery]? {
        guard !waiting.isEmpty else {
            isDelivering = false
            return nil
        }
        defer { waiting = [] }
        return waiting
    }
}
