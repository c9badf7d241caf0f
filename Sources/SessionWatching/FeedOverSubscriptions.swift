import TopChromeCore

/// A feed that keeps its subscribers in ``SessionSubscriptions``, as every
/// store does: what the core's feed asks of them is theirs.
public protocol FeedOverSubscriptions: SessionChangeFeed {
    var subscriptions: SessionSubscriptions { get }
}

extension FeedOverSubscriptions {
    public var subscriberCount: Int { subscriptions.count }
    public func allSubscribers() -> [any SessionSubscriber] { subscriptions.all() }
    public func endAllSubscriptions() -> [any SessionSubscriber] { subscriptions.removeAll() }
}
