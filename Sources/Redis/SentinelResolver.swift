import Locking

/// Finds the primary that Redis Sentinel names for a master, and hears when
/// it changes.
///
/// `SENTINEL get-master-addr-by-name` is asked of each sentinel in turn until
/// one answers; each sentinel also has a connection subscribed (plain
/// `SUBSCRIBE`, RESP2) to `+switch-master`, the message every sentinel
/// publishes once a failover promoted a replica, so that commands move to
/// the new primary without waiting to fail on the old one. A connection that
/// comes back subscribes again and asks once more: a switch may have
/// happened while it was away. Sentinels are asked with their own `AUTH`
/// (`sentinelUsername`/`sentinelPassword`), never the data nodes'.
public final class SentinelResolver: @unchecked Sendable {
    let sentinels: [RedisNode]
    let masterName: String
    private let configuration: RedisConfiguration
    private let lock = PthreadLock()

    // Guarded by `lock`.
    /// Told of a primary named by `+switch-master` or by a sentinel asked
    /// after a reconnection; dropped by `close()`, which ends the cycle
    /// through the client that set it.
    private var onPrimary: (@Sendable (RedisNode) -> Void)?
    private var listeners: [RedisConnection] = []
    private var closed = false

    /// - Parameter configuration: the sentinels' (see `RedisConfiguration.sentinels(of:)`).
    init(sentinels: [RedisNode], masterName: String, asking configuration: RedisConfiguration) {
        precondition(!sentinels.isEmpty, "Sentinel needs at least one sentinel")
        self.sentinels = sentinels
        self.masterName = masterName
        self.configuration = configuration
    }

    /// Starts listening for `+switch-master` on every sentinel.
    func listen(onPrimary: @escaping @Sendable (RedisNode) -> Void) {
        lock.withLock {
            guard !closed, listeners.isEmpty else { return }
            self.onPrimary = onPrimary
            // Made under the lock: a connection's first `.connected` looks
            // itself up in `listeners`, and waits for the lock until it is there.
            listeners = sentinels.map { sentinel in
                RedisConnection(to: sentinel, configuration: configuration) { event in self.heard(event, from: sentinel) }
            }
        }
    }

    /// Asks the sentinels in turn for the primary; nil when none named one
    /// (all away, or none knows `masterName`).
    func resolve(completion: @escaping @Sendable (RedisNode?) -> Void) {
        ask(sentinels[...], completion: completion)
    }

    func close() {
        let open = lock.withLock {
            closed = true
            onPrimary = nil
            defer { listeners = [] }
            return listeners
        }
        for connection in open { connection.close() }
    }

    private func ask(_ candidates: ArraySlice<RedisNode>, completion: @escaping @Sendable (RedisNode?) -> Void) {
        guard let sentinel = candidates.first, !lock.withLock({ closed }) else { return completion(nil) }
        let connection = RedisConnection(to: sentinel, configuration: configuration)
        connection.send(Self.primaryQuery(masterName), deadline: .now + configuration.commandTimeout) { result in
            connection.close()
            if case .success(let reply) = result, let primary = Self.primary(in: reply) {
                completion(primary)
            } else {
                self.ask(candidates.dropFirst(), completion: completion)
            }
        }
    }

    /// The question a sentinel is asked for the primary of `masterName`.
    public static func primaryQuery(_ masterName: String) -> [[UInt8]] {
        [Array("SENTINEL".utf8), Array("get-master-addr-by-name".utf8), Array(masterName.utf8)]
    }

    /// The primary in a sentinel's answer to `primaryQuery`: `[host, port]`;
    /// nil for anything else (a null reply: the sentinel knows no such master).
    public static func primary(in reply: RESPValue) -> RedisNode? {
        guard case .array(let parts) = reply, parts.count == 2, let host = parts[0].string,
              let port = parts[1].string.flatMap({ Int($0) }), (1...65535).contains(port) else { return nil }
        return RedisNode(host: host, port: port)
    }

    private static let subscribe = RESPRequest(["SUBSCRIBE", "+switch-master"])

    private func heard(_ event: RedisConnection.PushEvent, from sentinel: RedisNode) {
        switch event {
        case .connected:
            let connection = lock.withLock { listeners.first { $0.node == sentinel } }
            connection?.send(Self.subscribe, asking: false, deadline: nil) { _ in }
            // Anything missed while this sentinel was out of reach.
            resolve { node in if let node { self.lock.withLock { self.onPrimary }?(node) } }
        case .message(_, let payload):
            // "<master> <old ip> <old port> <new ip> <new port>"
            let words = String(decoding: payload, as: UTF8.self).split(separator: " ")
            guard words.count == 5, words[0] == masterName, let port = Int(words[4]), (1...65535).contains(port) else { return }
            lock.withLock { onPrimary }?(RedisNode(host: String(words[3]), port: port))
        case .disconnected, .unsubscribed:
            break
        }
    }
}

extension RedisConfiguration {
    /// How the sentinels of a client with `configuration` are asked: its
    /// timeout, backoff and TLS, the sentinels' own `AUTH`, nothing else
    /// (no setup commands, no name: a sentinel is not a data node).
    public static func sentinels(of configuration: RedisConfiguration) -> RedisConfiguration {
        var sentinels = RedisConfiguration()
        sentinels.commandTimeout = configuration.commandTimeout
        sentinels.reconnectBackoff = configuration.reconnectBackoff
        sentinels.username = configuration.sentinelUsername
        sentinels.password = configuration.sentinelPassword
        sentinels.tls = configuration.tls
        return sentinels
    }
}
