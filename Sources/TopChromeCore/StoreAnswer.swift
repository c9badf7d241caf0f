import Locking

/// Why a store gave no answer. Each case is something a client can retry;
/// none of them means other sessions were touched.
public enum StoreError: Error, Sendable, Hashable {
    /// There is no room for another session. `capacity`: the sessions the
    /// store holds at most, for a store that counts them; nil for one that
    /// runs out of memory instead (Redis: `maxmemory` reached).
    case full(capacity: Int?)
    /// The store is out of reach, or did not answer in time. When `mayHaveApplied`,
    /// the request went out and its answer did not come back: a change may
    /// have been made, and a client learns which by reading the session.
    case unavailable(reason: String, mayHaveApplied: Bool)
}

/// A store's answer as it comes, for a store that answers later (in another process).
public typealias StoreReply<Value> = @Sendable (Result<Value, StoreError>) -> Void

/// What a store answers a request with: the answer itself, or a promise of
/// it. The caller writes one path for both: a store in this process answers
/// `.now` (no allocation, no thread hop), one in another process `.later`,
/// so that no server thread ever waits for the network.
public enum StoreAnswer<Value: Sendable>: Sendable {
    case now(Result<Value, StoreError>)
    case later(PendingAnswer<Value>)
}

/// An answer that comes later, on a thread of the store's. The store
/// completes it once; the caller says once what to do with it. Either may
/// come first: the reply can beat the caller to it.
///
/// Inlinable, so that the store and the routes use it specialized for their
/// answer: unspecialized, every call looked up the generic types' metadata
/// at run time, some 4 k instructions per request on the Redis store.
public final class PendingAnswer<Value: Sendable>: @unchecked Sendable {
    @usableFromInline let lock = PthreadLock()
    @usableFromInline var result: Result<Value, StoreError>?
    @usableFromInline var handler: StoreReply<Value>?

    @inlinable
    public init() {}

    /// The store's answer. Only the first counts.
    @inlinable
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

    /// `handler` runs with the answer once it is there: now, on this thread,
    /// if it already is. Set it once.
    @inlinable
    public func whenAnswered(_ handler: @escaping StoreReply<Value>) {
        let ready = lock.withLock { () -> Result<Value, StoreError>? in
            if result == nil { self.handler = handler }
            return result
        }
        if let ready { handler(ready) }
    }
}

/// Whether a store can serve now, for `/readyz` and `/metrics`.
public enum StoreReadiness: Sendable, Hashable {
    case ready
    /// Not now; `reason` says why in an operator's words.
    case unavailable(reason: String)
}
