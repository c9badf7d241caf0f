/// Why a store in another process gave no answer. Each case is something a
/// client can retry; none of them means other sessions were touched.
public enum RemoteStoreError: Error, Sendable, Hashable {
    /// There is no room for another session (Redis: `maxmemory` reached).
    case full
    /// The store is out of reach, or did not answer in time. When `mayHaveApplied`,
    /// the request went out and its answer did not come back: a change may
    /// have been made, and a client learns which by reading the session.
    case unavailable(reason: String, mayHaveApplied: Bool)
}

/// The answer of a store in another process, when it comes.
public typealias RemoteReply<Value> = @Sendable (Result<Value, RemoteStoreError>) -> Void

/// Whether a store in another process can serve now, for `/readyz`.
public enum RemoteStoreReadiness: Sendable, Hashable {
    case ready
    /// Not now; `reason` says why in an operator's words.
    case unavailable(reason: String)
}

/// A store in another process (Redis), shared by every replica of the
/// service: the same operations and rules as ``SessionStore``, but each
/// answer comes later, through `reply`, on a thread of the store's. A server
/// thread must never wait for the network: the request waits instead,
/// holding no thread, and the reply resumes it.
public protocol RemoteSessionStore: Sendable {
    var readiness: RemoteStoreReadiness { get }

    /// Creates a session with a fresh id and the given inset.
    func create(inset: Double, reply: @escaping RemoteReply<Session>)

    /// The session, or nil if it does not exist (or has expired). A read is
    /// a use: it keeps the session from expiring.
    func session(_ id: SessionID, reply: @escaping RemoteReply<Session?>)

    /// ``SessionStore/apply(_:to:if:)``: the inputs in order, as one unit, if
    /// `condition` holds for the state at that moment.
    func apply(_ inputs: [ChromeInput], to id: SessionID, if condition: VersionCondition,
               reply: @escaping RemoteReply<StoreOutcome>)

    /// ``SessionStore/remove(_:if:)``.
    func remove(_ id: SessionID, if condition: VersionCondition, reply: @escaping RemoteReply<StoreOutcome>)
}

/// The changes of a ``RemoteSessionStore``, whichever replica made them:
/// the same subscriptions as ``SessionChangeFeed``, but the state to start
/// from comes later, once the feed listens to the session.
///
/// A feed that loses its source (a dropped connection, a moved shard) gets
/// it back, reads each watched session again and publishes it as a
/// ``SessionChange/isResynchronization`` change: changes published
/// meanwhile may be lost, the state after it is what the store holds.
public protocol RemoteChangeFeed: Sendable {
    var subscriptions: SessionSubscriptions { get }

    /// Subscribes to `id`; `reply` gets the session as it is once the feed
    /// listens to it, and every change after that state reaches `subscriber`.
    /// Nil, or an error, and the subscription is ended. A refusal (too many
    /// subscribers) comes at once.
    func subscribe(_ subscriber: any SessionSubscriber, to id: SessionID,
                   reply: @escaping RemoteReply<Session?>) throws(SubscriptionRefusal)

    /// Ends a subscription; nothing if there is none.
    func unsubscribe(_ subscriber: any SessionSubscriber, from id: SessionID)
}
