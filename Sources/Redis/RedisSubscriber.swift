import Locking

/// Sharded pub/sub (`SSUBSCRIBE`) on the nodes a `RedisClient` routes to:
/// each channel is subscribed on the node serving its slot, through one
/// subscribed connection per node, opened when first needed.
///
/// A subscription outlives what breaks it: when a connection drops (or its
/// server goes silent), when the server drops the channel because its slot
/// moved (an `sunsubscribe` push), or when `SSUBSCRIBE` is answered `MOVED`,
/// the channel is subscribed again wherever its slot is served now, after a
/// jittered backoff when attempts fail, and `onSubscribed` runs again.
/// Messages published while a channel was not subscribed are lost: whoever
/// mirrors state from a channel re-reads it in `onSubscribed`. After a loss
/// the client's slot map is refreshed before subscribing again: a replica
/// accepts `SSUBSCRIBE` for its primary's slots, and the old primary, asked
/// through a stale map after a failover, would take the subscription without
/// getting the new primary's messages.
///
/// A channel is subscribed once however many subscriptions ask for it; each
/// subscription has its own callbacks and gets messages only after its own
/// `onSubscribed`. Callers never block; the callbacks run on a connection's
/// I/O thread, never on the caller's, in order and never two at once for one
/// subscription. They must be quick: a slow one delays every channel of its node.
public final class RedisSubscriber: @unchecked Sendable {
    /// What `unsubscribe` takes back.
    public struct Subscription: Hashable, Sendable {
        public let channel: [UInt8]
        fileprivate let id: UInt64
    }

    private let client: RedisClient
    private let configuration: RedisConfiguration
    private let lock = PthreadLock()

    // Guarded by `lock`.
    private var channels: [[UInt8]: Channel] = [:]
    /// The serial tells a connection's events from those of one closed earlier for the same node.
    private var connections: [RedisNode: (connection: RedisConnection, serial: UInt64)] = [:]
    /// Ids of subscriptions, attempts and connections.
    private var lastID: UInt64 = 0
    /// How many channels are `.waiting`.
    private var waitingCount = 0
    private var retryAttempt = 0
    private var retryScheduled = false
    private var closed = false

    private struct Listener {
        let onSubscribed: @Sendable () -> Void
        let onLost: (@Sendable () -> Void)?
        let onMessage: @Sendable ([UInt8]) -> Void
        /// Whether its `onSubscribed` ran since it subscribed or last lost the channel.
        var live = false
    }

    private struct Channel {
        var listeners: [UInt64: Listener]
        var state = State.waiting
        var everSubscribed = false
    }

    private enum State {
        /// `SSUBSCRIBE` sent; `attempt` tells its reply from a stale one's.
        case subscribing(RedisNode, attempt: UInt64, redirects: Int)
        case subscribed(RedisNode)
        /// Lost; waiting once its subscriptions have been told.
        case lost
        /// Not subscribed: for the next retry, or the first connection.
        case waiting

        var node: RedisNode? {
            switch self {
            case .subscribing(let node, _, _), .subscribed(let node): node
            case .lost, .waiting: nil
            }
        }
    }

    /// An `SSUBSCRIBE` to send once the lock is released.
    private struct Attempt {
        let channel: [UInt8]
        let connection: RedisConnection
        let id: UInt64
        let redirects: Int
    }

    /// Subscribes through `client`'s topology and with its configuration
    /// (password, timeouts, backoff, metrics). Close it apart from the client.
    public init(client: RedisClient) {
        self.client = client
        configuration = client.configuration
        if client.followsSentinel { client.watchPrimary(ObjectIdentifier(self)) { self.primaryMoved() } }
    }

    /// How many channels are held (subscribed, or being subscribed again).
    public var count: Int {
        lock.withLock { channels.count }
    }

    /// Starts delivering `channel`'s messages. `onSubscribed` runs each time
    /// the subscription becomes live: the first time, and after every
    /// re-subscription that follows a loss; `onLost`, when a live
    /// subscription is lost; `onMessage`, with each message, in order.
    public func subscribe(_ channel: [UInt8], onSubscribed: @escaping @Sendable () -> Void,
                          onLost: (@Sendable () -> Void)? = nil,
                          onMessage: @escaping @Sendable ([UInt8]) -> Void) -> Subscription {
        enum Start { case nothing, subscribe(Attempt), join(RedisConnection) }
        let (id, start): (UInt64, Start) = lock.withLock {
            lastID += 1
            let id = lastID
            guard !closed else { return (id, .nothing) }
            let listener = Listener(onSubscribed: onSubscribed, onLost: onLost, onMessage: onMessage)
            if channels[channel] != nil {
                channels[channel]?.listeners[id] = listener
                guard case .subscribed(let node) = channels[channel]?.state else { return (id, .nothing) }
                return (id, .join(connectionLocked(to: node)))
            }
            channels[channel] = Channel(listeners: [id: listener])
            waitingCount += 1
            return (id, attemptLocked(channel).map { .subscribe($0) } ?? .nothing)
        }
        switch start {
        case .nothing:
            break
        case .subscribe(let attempt):
            send(attempt)
        case .join(let connection):
            // The channel is live already; the reply to a PING sent after it
            // says that every message this subscription could have missed
            // came before, so that its `onSubscribed` (and a read then) covers them.
            let node = connection.node
            connection.send(Self.ping, asking: false, deadline: nil) { result in
                if case .success = result { self.joined(id, channel, on: node) }
            }
        }
        return Subscription(channel: channel, id: id)
    }

    /// Stops the subscription's callbacks (one already on its way on an I/O
    /// thread may still run); the channel is unsubscribed once no
    /// subscription holds it. May be called from a callback.
    public func unsubscribe(_ subscription: Subscription) {
        let connection: RedisConnection? = lock.withLock {
            guard var entry = channels[subscription.channel],
                  entry.listeners.removeValue(forKey: subscription.id) != nil else { return nil }
            guard entry.listeners.isEmpty else {
                channels[subscription.channel] = entry
                return nil
            }
            if case .waiting = entry.state { waitingCount -= 1 }
            channels[subscription.channel] = nil
            return entry.state.node.flatMap { connections[$0]?.connection }
        }
        connection?.sendUnanswered(RESPRequest([Self.sunsubscribe, subscription.channel]))
    }

    /// Its connections now, for a census.
    var subscribedConnections: [RedisConnection] {
        lock.withLock { connections.values.map(\.connection) }
    }

    /// Closes every subscribed connection; only callbacks already on their way still run.
    public func close() {
        let open: [RedisConnection] = lock.withLock {
            closed = true
            channels = [:]
            waitingCount = 0
            defer { connections = [:] }
            return connections.values.map(\.connection)
        }
        client.unwatchPrimary(ObjectIdentifier(self))
        for connection in open { connection.close() }
    }

    private static let ssubscribe = Array("SSUBSCRIBE".utf8)
    private static let sunsubscribe = Array("SUNSUBSCRIBE".utf8)
    private static let ping = RESPRequest(["PING"])

    // MARK: Subscribing

    private func setLocked(_ state: State, of channel: [UInt8]) {
        guard let old = channels[channel]?.state else { return }
        if case .waiting = old { waitingCount -= 1 }
        if case .waiting = state { waitingCount += 1 }
        channels[channel]?.state = state
    }

    /// Points `channel` at the node serving its slot now (or at `node`, which
    /// a `MOVED` named); nil once the client is closed.
    private func attemptLocked(_ channel: [UInt8], at node: RedisNode? = nil, redirects: Int = 0) -> Attempt? {
        guard let node = node ?? client.node(serving: HashSlot.of(channel)) else { return nil }
        lastID += 1
        let id = lastID
        setLocked(.subscribing(node, attempt: id, redirects: redirects), of: channel)
        return Attempt(channel: channel, connection: connectionLocked(to: node), id: id, redirects: redirects)
    }

    private func connectionLocked(to node: RedisNode) -> RedisConnection {
        if let existing = connections[node] { return existing.connection }
        lastID += 1
        let serial = lastID
        let connection = RedisConnection(to: node, configuration: configuration) { event in
            self.handle(event, from: node, serial: serial)
        }
        connections[node] = (connection, serial)
        return connection
    }

    private func send(_ attempt: Attempt) {
        let node = attempt.connection.node
        attempt.connection.send(RESPRequest([Self.ssubscribe, attempt.channel]), asking: false, deadline: nil) { result in
            self.confirm(result, of: attempt, from: node)
        }
    }

    /// Takes the reply to an `SSUBSCRIBE`; runs on the I/O thread, or on the
    /// sender's when the connection refused it at once (then it calls no callback).
    private func confirm(_ result: Result<RESPValue, RedisError>, of sent: Attempt, from node: RedisNode) {
        enum Next {
            case nothing
            case subscribed([@Sendable () -> Void], again: Bool)
            case redirected(ClusterRedirect, Attempt?)
            case retry(undo: Bool)
            case undo
        }
        let isConfirmation = if case .success(.array(let parts)) = result, parts.first?.string == "ssubscribe" { true } else { false }
        let next: Next = lock.withLock {
            guard let entry = channels[sent.channel], case .subscribing(_, sent.id, _) = entry.state else {
                // Unsubscribed meanwhile, and the two commands may have
                // crossed on their way to the connection.
                return isConfirmation && channels[sent.channel] == nil ? .undo : .nothing
            }
            if isConfirmation {
                setLocked(.subscribed(node), of: sent.channel)
                for id in entry.listeners.keys { channels[sent.channel]?.listeners[id]?.live = true }
                channels[sent.channel]?.everSubscribed = true
                let (callbacks, again) = (entry.listeners.values.map(\.onSubscribed), entry.everSubscribed)
                if waitingCount == 0 { retryAttempt = 0 }
                return .subscribed(callbacks, again: again)
            }
            if case .success(.error(let message)) = result, let redirect = ClusterRedirect(message), !redirect.asking,
               sent.redirects < configuration.maxRedirects {
                return .redirected(redirect, attemptLocked(sent.channel, at: redirect.node, redirects: sent.redirects + 1))
            }
            setLocked(.waiting, of: sent.channel)
            // A late confirmation would leave a subscription nobody reads.
            return .retry(undo: result == .failure(.timeout))
        }
        switch next {
        case .nothing:
            break
        case .subscribed(let callbacks, let again):
            if again { configuration.metrics.resubscribed(node) }
            for callback in callbacks { callback() }
        case .redirected(let redirect, let attempt):
            client.moved(redirect)
            if let attempt { send(attempt) }
        case .retry(let undo):
            if undo { sent.connection.sendUnanswered(RESPRequest([Self.sunsubscribe, sent.channel])) }
            client.refreshTopology(askingFirst: nil) { self.scheduleRetry() }
        case .undo:
            sent.connection.sendUnanswered(RESPRequest([Self.sunsubscribe, sent.channel]))
        }
    }

    /// A subscription joined a channel that was live: it is live too, unless
    /// the channel was lost meanwhile (then its re-subscription says so).
    private func joined(_ id: UInt64, _ channel: [UInt8], on node: RedisNode) {
        let onSubscribed: (@Sendable () -> Void)? = lock.withLock {
            guard let entry = channels[channel], case .subscribed(node) = entry.state,
                  let listener = entry.listeners[id], !listener.live else { return nil }
            channels[channel]?.listeners[id]?.live = true
            return listener.onSubscribed
        }
        onSubscribed?()
    }

    // MARK: Losses and retries

    private func handle(_ event: RedisConnection.PushEvent, from node: RedisNode, serial: UInt64) {
        switch event {
        case .message(let channel, let payload):
            let receivers: [@Sendable ([UInt8]) -> Void] = lock.withLock {
                guard connections[node]?.serial == serial, let entry = channels[channel],
                      case .subscribed(node) = entry.state else { return [] }
                return entry.listeners.values.filter(\.live).map(\.onMessage)
            }
            for receive in receivers { receive(payload) }
        case .unsubscribed(let channel):
            lose([channel], on: node, serial: serial)
        case .disconnected:
            lose(nil, on: node, serial: serial)
        case .connected:
            // Back after a loss: no need to wait out the backoff.
            if lock.withLock({ connections[node]?.serial == serial && waitingCount > 0 }) { retry(scheduled: false) }
        }
    }

    /// Marks the channels (all of the node's when nil) that were subscribed
    /// on `node` as lost, tells their live subscriptions, and retries.
    private func lose(_ lostChannels: [[UInt8]]?, on node: RedisNode, serial: UInt64) {
        let (lost, onLost): ([[UInt8]], [@Sendable () -> Void]) = lock.withLock {
            guard connections[node]?.serial == serial else { return ([], []) }
            var lost: [[UInt8]] = []
            var onLost: [@Sendable () -> Void] = []
            for channel in lostChannels ?? Array(channels.keys) {
                guard let entry = channels[channel], case .subscribed(node) = entry.state else { continue }
                lost.append(channel)
                for (id, listener) in entry.listeners where listener.live {
                    channels[channel]?.listeners[id]?.live = false
                    if let callback = listener.onLost { onLost.append(callback) }
                }
                setLocked(.lost, of: channel)
            }
            return (lost, onLost)
        }
        guard !lost.isEmpty else { return }
        for _ in lost { configuration.metrics.subscriptionLost(node) }
        // Told before the channels can be retried, so that no subscription
        // hears of its re-subscription before it hears of the loss.
        for callback in onLost { callback() }
        lock.withLock {
            for channel in lost {
                if case .lost = channels[channel]?.state { setLocked(.waiting, of: channel) }
            }
        }
        // After the map is refreshed: the loss may mean the slot moved. A
        // node that dropped the channel itself knows where its slot went.
        client.refreshTopology(askingFirst: lostChannels == nil ? nil : node) { self.scheduleRetry() }
    }

    /// Sentinel named another primary: channels held on the old one are
    /// lost, whatever it still says, since it no longer gets the messages
    /// (a demoted primary drops its subscribers only seconds later).
    private func primaryMoved() {
        let serving = client.servingNodes
        let stale = lock.withLock { connections.filter { !serving.contains($0.key) }.map { ($0.key, $0.value.serial) } }
        for (node, serial) in stale { lose(nil, on: node, serial: serial) }
    }

    private func scheduleRetry() {
        let delay: Duration? = lock.withLock {
            guard !closed, !retryScheduled, waitingCount > 0 else { return nil }
            retryScheduled = true
            defer { retryAttempt += 1 }
            return configuration.reconnectBackoff.delay(attempt: retryAttempt)
        }
        guard let delay else { return }
        after(delay) { self.retry(scheduled: true) }
    }

    /// Subscribes every waiting channel where its slot is served now, and
    /// closes the connections to nodes that serve nothing and hold nothing
    /// (a primary that failed over, a node that left).
    private func retry(scheduled: Bool) {
        let serving = client.servingNodes
        let (attempts, idle): ([Attempt], [RedisConnection]) = lock.withLock {
            if scheduled { retryScheduled = false }
            guard !closed else { return ([], []) }
            let waiting = channels.compactMap { channel, entry in if case .waiting = entry.state { channel } else { nil } }
            let attempts = waiting.compactMap { attemptLocked($0) }
            let used = Set(channels.values.compactMap(\.state.node))
            let idle = connections.filter { !used.contains($0.key) && !serving.contains($0.key) }
            for node in idle.keys { connections[node] = nil }
            return (attempts, idle.values.map(\.connection))
        }
        for connection in idle { connection.close() }
        for attempt in attempts { send(attempt) }
    }
}
