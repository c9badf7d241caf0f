import Locking
import TopChromeCore

/// An answer that comes later, on a thread of the store's (the Redis
/// client's I/O threads). The store completes it once; the caller says once
/// what to do with it. Either may come first: the reply can beat the caller to it.
///
/// It holds closures, not the result: their layout is the same for every
/// `Value`, so `whenAnswered` (called through `LaterAnswer`, never
/// specialized) and the deinit need no lookup of `Value`'s types at run
/// time, which cost more than the rest of them. Only `complete(with:)`
/// touches the result, and it is compiled into the store that calls it.
public final class PendingAnswer<Value: Sendable>: LaterAnswer, @unchecked Sendable {
    @usableFromInline let lock = PthreadLock()
    // Guarded by `lock`.
    @usableFromInline var answered = false
    @usableFromInline var handler: StoreReply<Value>?
    /// Set when the answer came first: gives it to the handler once that comes.
    @usableFromInline var delivery: (@Sendable (StoreReply<Value>) -> Void)?

    public init() {}

    /// The store's answer. Only the first counts.
    @inlinable
    public func complete(with result: Result<Value, StoreError>) {
        lock.lock()
        guard !answered else { return lock.unlock() }
        answered = true
        let handler = self.handler
        self.handler = nil
        if handler == nil { delivery = { $0(result) } }
        lock.unlock()
        // Outside the lock: the handler may take its time (answer a request, start a watch).
        handler?(result)
    }

    public func whenAnswered(_ handler: @escaping StoreReply<Value>) {
        lock.lock()
        let delivery = self.delivery
        if delivery == nil { self.handler = handler } else { self.delivery = nil }
        lock.unlock()
        delivery?(handler)
    }
}
