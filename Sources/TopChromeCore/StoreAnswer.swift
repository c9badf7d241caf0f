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
    /// A change was not sent because the store could not give it a
    /// deadline (Redis refused `TIME`): nothing was changed. A fault of the
    /// store's configuration, told apart from an outage.
    case deadlineUnknown(reason: String)
}

/// A store's answer as it comes, for a store that answers later (in another process).
public typealias StoreReply<Value> = @Sendable (Result<Value, StoreError>) -> Void

/// What a store answers a request with: the answer itself, or a promise of
/// it. The caller writes one path for both: a store in this process answers
/// `.now` (no allocation, no thread hop), one in another process `.later`,
/// so that no server thread ever waits for the network.
public enum StoreAnswer<Value: Sendable>: Sendable {
    case now(Result<Value, StoreError>)
    case later(any LaterAnswer<Value>)
}

/// An answer that comes later, on a thread of the store's. The store
/// completes it once; the caller says once what to do with it. A protocol,
/// so that the core needs no lock: the store that answers later brings one.
public protocol LaterAnswer<Value>: AnyObject, Sendable {
    associatedtype Value: Sendable

    /// `handler` runs with the answer once it is there: now, on this thread,
    /// if it already is. Set it once.
    func whenAnswered(_ handler: @escaping StoreReply<Value>)
}

/// Whether a store can serve now, for `/readyz` and `/metrics`.
public enum StoreReadiness: Sendable, Hashable {
    case ready
    /// Not now; `reason` says why in an operator's words.
    case unavailable(reason: String)
}
