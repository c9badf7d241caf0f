import Locking
import TopChromeCore

/// An answer that comes later, on a thread of the store's (the Redis
/// client's I/O threads). The store completes it once; the caller says once
/// what to do with it. Either may come first: the reply can beat the caller to it.
public final class PendingAnswer<Value: Sendable>: LaterAnswer, @unchecked Sendable {
    private let lock = PthreadLock()
    private var result: Result<Value, StoreError>?
    private var handler: StoreReply<Value>?

    public init() {}

    /// The store's answer. Only the first counts.
    public func complete(with result: Result<Value, StoreError>) {
        let handler = lock.withLock { () -> StoreReply<Value>? in
            guard self.result == nil else { return nil }
            self.result = result
            defer { self.handler = nil }
            return self.handler
        }
        // Outside the lock: the handler may take its time (answer a request, start a watch).
        handler?(result)
    }

    public func whenAnswered(_ handler: @escaping StoreReply<Value>) {
        let ready = lock.withLock { () -> Result<Value, StoreError>? in
            if result == nil { self.handler = handler }
            return result
        }
        if let ready { handler(ready) }
    }
}
