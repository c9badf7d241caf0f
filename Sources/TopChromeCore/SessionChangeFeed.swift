/// A store's changes, per session, for those who watch them. The store
/// publishes and subscribers listen; the store never knows who they are.
/// The memory store publishes in-process; a networked store publishes what
/// reaches it from elsewhere (pub/sub) through the same subscriptions.
///
/// A feed that loses its source (a dropped connection, a moved shard) gets
/// it back, reads each watched session again and publishes it as a
/// ``SessionChange/isResynchronization`` change: changes published
/// meanwhile may be lost, the state after it is what the store holds.
public protocol SessionChangeFeed: Sendable {
    /// Subscribes to `id`; the answer is the session as it is once the feed
    /// listens to it (at once in this process, later for a networked feed),
    /// and every change after that state reaches `subscriber`, none missed
    /// (possibly even before the answer comes, on another thread). Nil, or
    /// an error, and there is no subscription. A refusal (too many
    /// subscribers) comes at once.
    func requestSubscribe(_ subscriber: any SessionSubscriber, to id: SessionID)
        throws(SubscriptionRefusal) -> StoreAnswer<Session?>

    /// Ends a subscription; nothing if there is none. A subscriber may call
    /// it while being told of a change.
    func unsubscribe(_ subscriber: any SessionSubscriber, from id: SessionID)

    /// Subscriptions held now.
    var subscriberCount: Int { get }

    /// Every subscriber now, e.g. for a periodic heartbeat.
    func allSubscribers() -> [any SessionSubscriber]

    /// Ends every subscription and returns the subscribers: the service is stopping.
    func endAllSubscriptions() -> [any SessionSubscriber]
}
