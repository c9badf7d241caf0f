import Locking
import Redis
import SessionWatching
import TopChromeCore

/// Changes of sessions in Redis, for this replica's watchers, whichever
/// replica made them: the function library publishes each new state on
/// the session's channel, and this feed listens (`SSUBSCRIBE`) to the
/// channel of every session watched here, and to no other.
///
/// A watcher starts from a state read once the channel is live, so no
/// change falls between; changes that arrive while that read is out are
/// kept and handed on after it, if newer. A lost channel (a dropped
/// connection, a slot that moved, a failover) comes back on its own; then
/// the session is read again and published as a resynchronization, since
/// changes in the gap were not heard. A watcher whose first state has not
/// come within the client's command timeout (Redis away, the channel not
/// live) is answered with a failure, as a request would be
/// (`joinTimeout`, the client's command timeout). Watchers are told after
/// the feed's lock is released, through a `ChangeOutbox` as in the memory
/// store: one may unsubscribe while told, and none holds up a subscribe.
final class RedisChangeFeed: @unchecked Sendable {
    let functions: ChromeFunctions
    let subscriber: RedisSubscriber
    let subscriptions: SessionSubscriptions
    /// How long a subscriber waits for its first state: the channel may not
    /// come while Redis is away, and a request must not hang.
    let joinTimeout: Duration
    private let lock = PthreadLock()
    /// Guarded by `lock`.
    private var channels: [SessionID: Channel] = [:]
    /// Guarded by `lock`: what watchers are to be told once it is released.
    private var outbox = ChangeOutbox()

    private final class Channel {
        var subscription: RedisSubscriber.Subscription?
        var isLive = false
        /// Subscribers waiting for their first state, by identity.
        var joining: [ObjectIdentifier: Joining] = [:]
        /// Reads started; a read may start a subscriber only if it started after the subscriber joined.
        var readsStarted = 0
        /// Messages heard; a resynchronizing read overtaken by one is stale.
        var messagesHeard = 0
        /// The channel came back and the state could not be read yet.
        var needsResynchronization = false
        var hasBeenLive = false
        /// The state last handed on, from a message or a read: a change
        /// that ran on a node importing the slot is heard twice (published
        /// again through the slot's owner, see `ChromeFunctions`), and a
        /// state no newer than what watchers have is dropped; the periodic
        /// check reads again a session whose tag in Redis is not this one.
        var last: EntityTag?
    }

    private struct Joining {
        let subscriber: any SessionSubscriber
        let reply: StoreReply<Session?>
        /// `readsStarted` when it joined.
        let joinedAt: Int
        /// What the channel carried meanwhile, in order.
        var heard: [SessionEvent] = []
    }

    init(functions: ChromeFunctions, subscriber: RedisSubscriber, subscriptions: SessionSubscriptions,
         joinTimeout: Duration) {
        self.functions = functions
        self.joinTimeout = joinTimeout
        self.subscriber = subscriber
        self.subscriptions = subscriptions
    }

    var channelsHeld: Int {
        lock.withLock { channels.count }
    }

    func subscribe(_ subscriber: any SessionSubscriber, to id: SessionID,
                   reply: @escaping StoreReply<Session?>) throws(SubscriptionRefusal) {
        // The limits are checked again when the subscriber is added; this
        // refuses at once in the usual case.
        guard subscriptions.count < subscriptions.limits.total else {
            throw .tooManySubscribers(limit: subscriptions.limits.total)
        }
        // Redis known to be away: said at once, as to any other request,
        // rather than after waiting `joinTimeout` for a channel that cannot come.
        guard !functions.client.isAway(forKey: functions.key(for: id)) else {
            reply(.failure(.unavailable(reason: "no connection to Redis", mayHaveApplied: false)))
            return
        }
        enum Next { case listen, read(Int), wait }
        let next: Next = lock.withLock {
            // A channel is known from its first subscriber until nobody here
            // watches the session (`endIfUnwatched`): a new one is listened to.
            let known = channels[id]
            let channel = known ?? Channel()
            channels[id] = channel
            channel.joining[ObjectIdentifier(subscriber)] = Joining(
                subscriber: subscriber, reply: reply, joinedAt: channel.readsStarted)
            if known == nil { return .listen }
            guard channel.isLive else { return .wait }
            channel.readsStarted += 1
            return .read(channel.readsStarted)
        }
        after(joinTimeout) { self.giveUp(on: subscriber, of: id) }
        switch next {
        case .listen: listen(to: id)
        case let .read(number): read(id, number: number, resynchronizing: false)
        case .wait: break
        }
    }

    /// A subscriber still waiting for its first state is told Redis did not answer.
    private func giveUp(on subscriber: any SessionSubscriber, of id: SessionID) {
        let (late, ended) = lock.withLock { () -> (Joining?, RedisSubscriber.Subscription?) in
            guard let late = channels[id]?.joining.removeValue(forKey: ObjectIdentifier(subscriber)) else { return (nil, nil) }
            return (late, endIfUnwatched(id))
        }
        if let ended { release(ended, of: id) }
        late?.reply(.failure(.unavailable(reason: "Redis did not confirm the session's channel in time", mayHaveApplied: false)))
    }

    func unsubscribe(_ subscriber: any SessionSubscriber, from id: SessionID) {
        subscriptions.remove(subscriber, from: id)
        let ended = lock.withLock { () -> RedisSubscriber.Subscription? in
            channels[id]?.joining[ObjectIdentifier(subscriber)] = nil
            return endIfUnwatched(id)
        }
        if let ended { release(ended, of: id) }
    }

    // MARK: Listening

    private func listen(to id: SessionID) {
        let subscription = subscriber.subscribe(
            functions.channel(for: id),
            // Held strongly (LeakSanitizer takes weak references' tables left
            // at exit for leaks): the subscription is ended when the session
            // is no longer watched, and every one at `close()`.
            onSubscribed: { self.channelIsLive(id) },
            onLost: { self.channelLost(id) },
            onMessage: { message in self.heard(message, on: id) })
        let unwanted = lock.withLock { () -> Bool in
            guard let channel = channels[id] else { return true }
            channel.subscription = subscription
            return false
        }
        if unwanted { subscriber.unsubscribe(subscription) }
    }

    /// The channel is live: the first time, or again after it was lost.
    private func channelIsLive(_ id: SessionID) {
        let number: Int? = lock.withLock {
            guard let channel = channels[id] else { return nil }
            channel.isLive = true
            channel.needsResynchronization = channel.hasBeenLive
            // Back after a loss (a failover may have lost versions): drop
            // nothing heard until the session is read again.
            if channel.hasBeenLive { channel.last = nil }
            channel.hasBeenLive = true
            channel.readsStarted += 1
            return channel.readsStarted
        }
        if let number { read(id, number: number, resynchronizing: true) }
    }

    /// The channel was lost: changes go unheard until it is live again and
    /// the session read. Watchers that would answer from what they heard
    /// last are told; joiners wait for the channel (or their timeout).
    private func channelLost(_ id: SessionID) {
        let ended = lock.withLock { () -> RedisSubscriber.Subscription? in
            guard let channel = channels[id] else { return nil }
            channel.isLive = false
            outbox.add(subscriptions.collectUnheard(id))
            return endIfUnwatched(id)
        }
        deliverWaiting()
        if let ended { release(ended, of: id) }
    }

    private func heard(_ message: [UInt8], on id: SessionID) {
        guard let event = ChromeFunctions.event(message, of: id) else { return }
        let ended = lock.withLock { () -> RedisSubscriber.Subscription? in
            guard let channel = channels[id] else { return nil }
            if case let .changed(session) = event {
                if let last = channel.last, session.state.version <= last.version { return nil }
                channel.last = EntityTag(version: session.state.version, tag: session.tag)
            }
            channel.messagesHeard += 1
            for key in channel.joining.keys { channel.joining[key]?.heard.append(event) }
            // Collected under the lock: a subscriber being started meanwhile
            // gets what it missed first, then this.
            outbox.add(subscriptions.collect(event))
            return endIfUnwatched(id)
        }
        deliverWaiting()
        if let ended { release(ended, of: id) }
    }

    /// Reads the session. Starts the subscribers that joined before this
    /// read began; when `resynchronizing`, also publishes the state to
    /// those already started, unless a message overtook the read.
    private func read(_ id: SessionID, number: Int, resynchronizing: Bool) {
        let heardBefore = lock.withLock { channels[id]?.messagesHeard ?? 0 }
        functions.session(id) { [self] result in
            var replies: [(StoreReply<Session?>, Result<Session?, StoreError>)] = []
            let ended = lock.withLock { () -> RedisSubscriber.Subscription? in
                guard let channel = channels[id] else { return nil }
                // A read that ends after the channel was lost starts nobody:
                // they would miss what the lost channel does not carry.
                let ready = channel.isLive ? channel.joining.filter { $0.value.joinedAt < number } : [:]
                for (key, joining) in ready {
                    channel.joining[key] = nil
                    replies.append((joining.reply, start(joining, on: id, with: result.mapError(RedisSessionStore.readError))))
                }
                if case let .success(session?) = result, !ready.isEmpty, session.state.version > channel.last?.version ?? 0 {
                    channel.last = EntityTag(version: session.state.version, tag: session.tag)
                }
                if resynchronizing, channel.needsResynchronization {
                    switch result {
                    case let .success(session):
                        channel.needsResynchronization = false
                        if channel.messagesHeard == heardBefore {
                            // What watchers hold now, even if older (a failover lost changes).
                            channel.last = session.map { EntityTag(version: $0.state.version, tag: $0.tag) }
                            outbox.add(subscriptions.collect(session.map { .changed($0) } ?? .removed(id),
                                                             isResynchronization: true))
                        }
                    case .failure:
                        break  // read again by the next check (`keepWatchedSessionsAlive`)
                    }
                }
                return endIfUnwatched(id)
            }
            deliverWaiting()
            if let ended { release(ended, of: id) }
            for (reply, result) in replies { reply(result) }
        }
    }

    /// Adds a joining subscriber and puts what it missed after `result`'s
    /// state in the outbox for it; under the lock. What to reply.
    private func start(_ joining: Joining, on id: SessionID,
                       with result: Result<Session?, StoreError>) -> Result<Session?, StoreError> {
        guard case let .success(session?) = result else { return result }
        do {
            try subscriptions.add(joining.subscriber, for: id)
        } catch {
            let detail = switch error {
            case let .tooManySubscribers(limit): "the server has its maximum of \(limit) watchers"
            case let .tooManyForSession(limit): "this session has its maximum of \(limit) watchers"
            }
            return .failure(.unavailable(reason: detail, mayHaveApplied: false))
        }
        for event in joining.heard {
            switch event {
            case let .changed(later) where later.state.version > session.state.version:
                outbox.add(.changed(SessionChange(later), to: joining.subscriber))
            case .changed:
                break
            case .removed:
                subscriptions.remove(joining.subscriber, from: id)
                outbox.add(.removed(id, to: joining.subscriber))
                return result
            }
        }
        return result
    }

    /// Tells watchers what the outbox holds, unless another thread is at
    /// it; with the lock released. A watcher that answers it is done (a
    /// long-poll told its session is unheard) may have been its channel's
    /// last: that channel is ended then, as an unsubscribe ends it.
    private func deliverWaiting() {
        guard lock.withLock({ outbox.takeBaton() }) else { return }
        var left: Set<SessionID> = []
        while let batch = lock.withLock({ outbox.nextBatch() }) {
            for delivery in batch where subscriptions.deliver(delivery) { left.insert(delivery.sessionID) }
        }
        for id in left {
            if let ended = lock.withLock({ endIfUnwatched(id) }) { release(ended, of: id) }
        }
    }

    /// Stops listening to a channel nobody here watches any more. The
    /// session's idle time starts now: while watched it was kept alive
    /// (`keepWatchedSessionsAlive`), and the last watcher leaving is its last use.
    private func release(_ subscription: RedisSubscriber.Subscription, of id: SessionID) {
        subscriber.unsubscribe(subscription)
        functions.keepAlive(id) { _ in }
    }

    /// Forgets the channel once nobody here watches the session; under the lock.
    private func endIfUnwatched(_ id: SessionID) -> RedisSubscriber.Subscription? {
        guard let channel = channels[id], channel.joining.isEmpty, !subscriptions.isWatched(id) else { return nil }
        channels[id] = nil
        return channel.subscription
    }

    // MARK: Expiry

    /// Sessions per periodic check call: enough to make it cheap, few
    /// enough that one call holds Redis only briefly.
    static let sessionsPerCheck = 100

    /// Keeps each watched session from expiring (a watched session is in
    /// use), tells the watchers of those that are gone all the same, and
    /// reads again those whose state in Redis is not the one the watchers
    /// were told (a message missed) or whose channel came back while Redis
    /// could not be read. One call per slot (per `sessionsPerCheck`) rather
    /// than a command per session. Run more often than the idle timeout
    /// (the service: a quarter of it).
    func keepWatchedSessionsAlive() {
        let (checked, resynchronizing): ([SessionID], [(SessionID, Int)]) = lock.withLock {
            var checked: [SessionID] = [], resynchronizing: [(SessionID, Int)] = []
            for (id, channel) in channels where channel.isLive {
                if channel.needsResynchronization {
                    channel.readsStarted += 1
                    resynchronizing.append((id, channel.readsStarted))
                } else {
                    checked.append(id)
                }
            }
            return (checked, resynchronizing)
        }
        for (id, number) in resynchronizing { read(id, number: number, resynchronizing: true) }
        // A cluster takes the keys of one call from one slot only.
        let groups = functions.client.topology == .cluster
            ? Array(Dictionary(grouping: checked) { HashSlot.of(functions.key(for: $0)) }.values) : [checked]
        for group in groups {
            for start in stride(from: 0, to: group.count, by: Self.sessionsPerCheck) {
                let ids = Array(group[start..<min(start + Self.sessionsPerCheck, group.count)])
                functions.watched(ids) { [self] result in
                    // No answer: the next check tries again.
                    if case let .success(states) = result { compare(zip(ids, states)) }
                }
            }
        }
    }

    /// What the check found against what watchers were told.
    private func compare(_ found: Zip2Sequence<[SessionID], [ChromeFunctions.WatchedState]>) {
        var ended: [(RedisSubscriber.Subscription, SessionID)] = []
        var reads: [(SessionID, Int)] = []
        lock.withLock {
            for (id, state) in found {
                guard let channel = channels[id], channel.isLive else { continue }
                switch state {
                case .gone:
                    outbox.add(subscriptions.collect(.removed(id)))
                    if let subscription = endIfUnwatched(id) { ended.append((subscription, id)) }
                case let .tagged(tag) where tag != channel.last?.description:
                    channel.needsResynchronization = true
                    channel.readsStarted += 1
                    reads.append((id, channel.readsStarted))
                case .tagged:
                    break
                }
            }
        }
        deliverWaiting()
        for (subscription, id) in ended { release(subscription, of: id) }
        for (id, number) in reads { read(id, number: number, resynchronizing: true) }
    }
}
