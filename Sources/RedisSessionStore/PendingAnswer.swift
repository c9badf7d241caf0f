import Locking
import TopChromeCore

/// An answer that comes later, on one of the Redis client's threads. The
/// store completes it once; the caller says once what to do with it. Either
/// may come first: the reply can beat the caller to it.
final class PendingAnswer<Value: Sendable>: LaterAnswer, @unchecked Sendable {
    private let lock = PthreadLock()
    private var result: Result<Value, StoreError>?
    private var handler: StoreReply<Value>?

    init() {}

    /// The store's answer. Only the first counts.
    func complete(with result: Result<Value, StoreError>) {
        let handler = lock.withLock { () -> StoreReply<Value>? in
            guard self.result == nil else { return nil }
            self.result = result
            defer { self.handler = nil }
            return self.handler
        }
        // Outside the lock: the handler may take its time (answer a request, start a watch).
        handler?(result)
    }

    func whenAnswered(_ handler: @escaping StoreReply<Value>) {
        let ready = lock.withLock { () -> Result<Value, StoreError>? in
            if result == nil { self.handler = handler }
            return result
        }
        if let ready { handler(ready) }
    }
}
