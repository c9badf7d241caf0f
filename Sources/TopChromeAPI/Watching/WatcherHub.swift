import AccessTokens
import TopChromeCore

/// Someone waiting to learn of a session's changes: an event stream or a long-poll.
protocol SessionWatcher: SessionSubscriber {
    var id: SessionID { get }
    /// A periodic tick: streams send a heartbeat, so proxies keep them open
    /// and a client that left is noticed.
    func heartbeat()
    /// The server is stopping.
    func close()
    /// Ends the watch if an access token that `policy` now revokes opened
    /// it; returns whether it ended.
    func endIfRevoked(by policy: TokenVerifier.Policy) -> Bool
}

/// The API's watchers, held as subscriptions of the store's change feed:
/// the store publishes, watchers subscribe, and neither knows the other's
/// kind. A feed fed by another process's changes serves them the same way.
final class WatcherHub: Sendable {
    private let feed: any SessionChangeFeed

    init(feed: any SessionChangeFeed) {
        self.feed = feed
    }

    /// Watchers registered now.
    var count: Int {
        feed.subscriberCount
    }

    func remove(_ watcher: any SessionWatcher, for id: SessionID) {
        feed.unsubscribe(watcher, from: id)
    }

    func heartbeat() {
        for case let watcher as any SessionWatcher in feed.allSubscribers() { watcher.heartbeat() }
    }

    /// The revocation cut-off moved: the watches of the tokens it refuses end.
    func endWatches(revokedBy policy: TokenVerifier.Policy) {
        guard policy.notBefore != nil else { return }
        for case let watcher as any SessionWatcher in feed.allSubscribers() where watcher.endIfRevoked(by: policy) {
            feed.unsubscribe(watcher, from: watcher.id)
        }
    }

    /// Ends every watch: the server is stopping.
    func closeAll() {
        for case let watcher as any SessionWatcher in feed.endAllSubscriptions() { watcher.close() }
    }
}
