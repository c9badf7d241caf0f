import TopChromeCore

/// Someone waiting to learn of a session's changes: an event stream or a long-poll.
protocol SessionWatcher: SessionSubscriber {
    /// A periodic tick: streams send a heartbeat, so proxies keep them open
    /// and a client that left is noticed.
    func heartbeat()
    /// The server is stopping.
    func close()
}

/// The API's watchers, held as subscriptions of the store's change feed:
/// the store publishes, watchers subscribe, and neither knows the other's
/// kind. A feed fed by another process's changes serves them the same way.
final class WatcherHub: Sendable {
    /// The feed of a store in this process, or of one in another.
    enum Feed: Sendable {
        case local(any SessionChangeFeed)
        case remote(any RemoteChangeFeed)
    }

    private let feed: Feed
    private let subscriptions: SessionSubscriptions

    init(feed: Feed) {
        self.feed = feed
        subscriptions = switch feed {
        case let .local(local): local.subscriptions
        case let .remote(remote): remote.subscriptions
        }
    }

    /// Watchers registered now.
    var count: Int {
        subscriptions.count
    }

    func remove(_ watcher: any SessionWatcher, for id: SessionID) {
        switch feed {
        case let .local(local): local.unsubscribe(watcher, from: id)
        case let .remote(remote): remote.unsubscribe(watcher, from: id)
        }
    }

    func heartbeat() {
        for case let watcher as any SessionWatcher in subscriptions.all() { watcher.heartbeat() }
    }

    /// Ends every watch: the server is stopping.
    func closeAll() {
        for case let watcher as any SessionWatcher in subscriptions.removeAll() { watcher.close() }
    }
}
