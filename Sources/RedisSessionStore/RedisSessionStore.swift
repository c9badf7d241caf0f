import LaterAnswers
import Redis
import RuleStatistics
import SessionWatching
import TopChromeCore

/// Sessions in Redis or a Redis Cluster, shared by every replica of the
/// service: each change is one `FCALL` of the function library, atomic in
/// Redis, so no replica holds state of its own and any replica can serve
/// any session. Changes reach watchers on every replica through sharded
/// pub/sub (see ``RedisChangeFeed``).
public final class RedisSessionStore: SessionStore, FeedOverSubscriptions {
    public let functions: ChromeFunctions
    /// What the rules did, counted from each batch's reply.
    public let statistics = ChromeStatistics()
    private let feed: RedisChangeFeed
    let writeRefusals = WriteRefusals()

    /// - Parameters:
    ///   - functions: its client's configuration must load the library on
    ///     every connection (`ChromeFunctions.loadCommand` among the setup commands).
    ///   - subscriber: listens to the sessions' channels for watchers.
    ///   - timeout: how long a watcher waits for its session's channel
    ///     before it is told Redis is unavailable; the client's command timeout.
    public init(functions: ChromeFunctions, subscriber: RedisSubscriber,
                subscriptions: SessionSubscriptions = SessionSubscriptions(), timeout: Duration = .seconds(1)) {
        self.functions = functions
        feed = RedisChangeFeed(functions: functions, subscriber: subscriber, subscriptions: subscriptions,
                               joinTimeout: timeout)
    }

    public var subscriptions: SessionSubscriptions { feed.subscriptions }

    /// Ready while any part of the keyspace is served: with one primary of
    /// a cluster away, the sessions of the others are still served (those
    /// of its slots get 503 with `Retry-After`), and a load balancer that
    /// took every replica out would make that an outage of all of them.
    /// Not ready either while Redis refuses every change (``checkWrites``).
    public var readiness: StoreReadiness {
        guard functions.client.servesAnySlot else {
            return .unavailable(reason: functions.client.unavailableReason ?? "connecting to Redis")
        }
        if let refused = writeRefusals.current { return .unavailable(reason: refused) }
        return .ready
    }

    /// Hash slots whose primary is not connected now (all of them while
    /// Redis is away), for `/metrics`.
    public var unservedSlots: Int { functions.client.unservedSlots }

    /// Connections per node and commands awaiting replies, for `/metrics`.
    public var census: RedisCensus {
        var census = functions.client.census()
        feed.subscriber.count(into: &census)
        return census
    }

    /// Ids are drawn here, so a replica never needs another's consent; a
    /// taken id (a one-in-2^128 event) is drawn again.
    public func create(inset: Double, settings: RevealSettings = RevealSettings(), reply: @escaping StoreReply<Session>) {
        create(inset: inset, settings: settings, attemptsLeft: 3, reply: reply)
    }

    private func create(inset: Double, settings: RevealSettings, attemptsLeft: Int, reply: @escaping StoreReply<Session>) {
        functions.create(SessionID.random(), inset: inset, settings: settings) { [self] result in
            switch result {
            case let .success(session?):
                reply(.success(session))
            case .success(nil) where attemptsLeft > 1:
                create(inset: inset, settings: settings, attemptsLeft: attemptsLeft - 1, reply: reply)
            case .success(nil):
                reply(.failure(.unavailable(reason: "no fresh session id could be drawn", mayHaveApplied: false)))
            case let .failure(error):
                reply(.failure(Self.storeError(error)))
            }
        }
    }

    public func session(_ id: SessionID, reply: @escaping StoreReply<Session?>) {
        functions.session(id) { reply($0.mapError(Self.readError)) }
    }

    public func apply(_ inputs: [ChromeInput], to id: SessionID, if condition: VersionCondition,
                      reply: @escaping StoreReply<StoreOutcome>) {
        functions.apply(inputs, to: id, if: condition) { [statistics] result in reply(Self.outcome(result, statistics)) }
    }

    /// What a batch did, its reports counted.
    private static func outcome(_ result: Result<AppliedInputs, ChromeFunctionError>,
                                _ statistics: ChromeStatistics) -> Result<StoreOutcome, StoreError> {
        result.map { applied in
            for report in applied.reports { statistics.record(report, flipped: false) }
            return applied.outcome
        }.mapError(Self.storeError)
    }

    public func remove(_ id: SessionID, if condition: VersionCondition, reply: @escaping StoreReply<StoreOutcome>) {
        functions.remove(id, if: condition) { reply($0.mapError(Self.storeError)) }
    }

    public func subscribe(_ subscriber: any SessionSubscriber, to id: SessionID,
                          reply: @escaping StoreReply<Session?>) throws(SubscriptionRefusal) {
        try feed.subscribe(subscriber, to: id, reply: reply)
    }

    // MARK: SessionStore and SessionChangeFeed: every answer comes later, on a Redis I/O thread.

    /// Redis's count is not known without asking it.
    public var sessionCount: Int? { nil }

    public func requestCreate(inset: Double, settings: RevealSettings) -> StoreAnswer<Session> {
        later { create(inset: inset, settings: settings, reply: $0) }
    }

    public func requestSession(_ id: SessionID) -> StoreAnswer<Session?> {
        later { session(id, reply: $0) }
    }

    public func requestApply(_ inputs: [ChromeInput], to id: SessionID,
                             if condition: VersionCondition) -> StoreAnswer<StoreOutcome> {
        let pending = PendingAnswer<StoreOutcome>()
        functions.apply(inputs, to: id, if: condition) { [statistics] in pending.complete(with: Self.outcome($0, statistics)) }
        return .later(pending)
    }

    /// A lone input, as every scroll report is: one answer's worth of work
    /// less than `later`'s wrapping, and no array for the input.
    public func requestApply(_ input: ChromeInput, to id: SessionID,
                             if condition: VersionCondition) -> StoreAnswer<StoreOutcome> {
        let pending = PendingAnswer<StoreOutcome>()
        functions.apply(input, to: id, if: condition) { [statistics] in pending.complete(with: Self.outcome($0, statistics)) }
        return .later(pending)
    }

    public func requestRemove(_ id: SessionID, if condition: VersionCondition) -> StoreAnswer<StoreOutcome> {
        later { remove(id, if: condition, reply: $0) }
    }

    public func requestSubscribe(_ subscriber: any SessionSubscriber,
                                 to id: SessionID) throws(SubscriptionRefusal) -> StoreAnswer<Session?> {
        try later { reply throws(SubscriptionRefusal) in try subscribe(subscriber, to: id, reply: reply) }
    }

    private func later<Value, Refusal>(
        _ ask: (@escaping StoreReply<Value>) throws(Refusal) -> Void
    ) throws(Refusal) -> StoreAnswer<Value> {
        let pending = PendingAnswer<Value>()
        try ask { pending.complete(with: $0) }
        return .later(pending)
    }

    public func unsubscribe(_ subscriber: any SessionSubscriber, from id: SessionID) {
        feed.unsubscribe(subscriber, from: id)
    }

    /// Keeps the sessions watched here from expiring, and tells watchers of
    /// sessions gone all the same (Redis drops a key without a word on the
    /// session's channel). The service calls this periodically, more often
    /// than the idle timeout, as the memory store sweeps.
    public func keepWatchedSessionsAlive() {
        feed.keepWatchedSessionsAlive()
    }

    /// Closes the connections to Redis: the service has stopped.
    public func close() {
        feed.subscriber.close()
        functions.client.close()
    }

    /// Channels listened to now, one per watched session.
    public var channelsHeld: Int { feed.channelsHeld }

    /// What a client is told of a failed call.
    static func storeError(_ error: ChromeFunctionError) -> StoreError {
        switch error {
        case let .redis(error):
            return storeError(error)
        case let .refused(message) where message.hasPrefix("OOM"):
            // `maxmemory` reached under `noeviction`: no room, nothing written.
            return .full(capacity: nil)
        case let .refused(message):
            return .unavailable(reason: "Redis refused the call: \(message.prefix(120))", mayHaveApplied: false)
        case .unexpectedReply:
            return .unavailable(reason: "Redis answered in a way the function library never does", mayHaveApplied: false)
        case .late:
            return .unavailable(reason: "the change reached Redis after its deadline and was refused", mayHaveApplied: false)
        case let .deadlineUnknown(message):
            return .deadlineUnknown(reason: "Redis refused to tell its clock (TIME): \(message.prefix(120))")
        case let .notReplicated(wanted, acknowledged):
            let replicas = wanted == 1 ? "1 Redis replica" : "\(wanted) Redis replicas"
            let heard = acknowledged.map { "only \($0) acknowledged it" } ?? "the wait for them got no answer"
            return .unavailable(reason: "the change was made but not confirmed by \(replicas): \(heard), so a failover could lose it",
                                mayHaveApplied: true)
        }
    }

    /// What a client is told of a failed read: it asked for no change, so
    /// none can have been made (the slid expiry is no change of the session).
    static func readError(_ error: ChromeFunctionError) -> StoreError {
        switch storeError(error) {
        case let .unavailable(reason, _): .unavailable(reason: reason, mayHaveApplied: false)
        case .full: .full(capacity: nil)
        case let .deadlineUnknown(reason): .deadlineUnknown(reason: reason)
        }
    }

    static func storeError(_ error: RedisError) -> StoreError {
        switch error {
        case .unavailable: .unavailable(reason: "no connection to Redis", mayHaveApplied: false)
        case .timeout: .unavailable(reason: "Redis did not answer in time", mayHaveApplied: true)
        case .connectionLost: .unavailable(reason: "the connection to Redis was lost", mayHaveApplied: true)
        case .tryAgain: .unavailable(reason: "the session's slot is moving between Redis nodes", mayHaveApplied: false)
        case .clusterDown: .unavailable(reason: "the Redis cluster cannot serve the session's slot", mayHaveApplied: false)
        case .tooManyRedirects: .unavailable(reason: "the Redis cluster's layout is changing", mayHaveApplied: false)
        }
    }
}
