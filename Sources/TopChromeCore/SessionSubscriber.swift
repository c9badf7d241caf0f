/// Someone told of one session's changes: every change after the state
/// `SessionChangeFeed.requestSubscribe(_:to:)` answered, in order, then its removal.
public protocol SessionSubscriber: AnyObject, Sendable {
    /// The session changed. Returns whether to stay subscribed. Called in
    /// order, one change at a time, after the store released the session:
    /// a slow subscriber holds up only the delivery of later changes.
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
