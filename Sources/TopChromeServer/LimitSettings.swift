import TopChromeAPI

/// How much one server, one client address and one session may hold or ask
/// for: sessions, bodies, connections, watchers, and sessions created.
public struct LimitSettings: Sendable, Equatable {
    public var maxSessions = 1_000_000
    public var maxBodyBytes = 65_536
    public var maxConnections = 10_000
    /// Connections from one client address at most; 0 = no limit. An app
    /// holds two (its event stream and its requests); the rest is room for
    /// devices behind one NAT. Trusted proxies are exempt.
    public var maxConnectionsPerIP = 64
    public var maxWatchers = 10_000
    public var maxWatchersPerSession = 64
    /// Longest long-poll (`Prefer: wait=N`) honoured, in seconds.
    public var maxWaitSeconds = 60
    /// Sessions one client address (an IPv6 /64) may create a second, and
    /// at once; more get 429. 0: no limit. See `CreationRatePolicy` for why these.
    /// Messages a second one WebSocket may send, and as many at once: a
    /// device at 120 Hz sends fewer, its reports batched; more close it (1008).
    public var socketMessagesPerSecond = 200
    public var createRate = 20
    public var createBurst = 200

    /// Nil when `--create-rate` is 0.
    public var creationRate: CreationRatePolicy? {
        createRate > 0 ? CreationRatePolicy(perSecond: createRate, burst: createBurst) : nil
    }

    static let options: [ServiceConfiguration.Option] = [
        .number("max-sessions", "N", help: "Sessions held at most; more get 503 (default {default}).", \.limits.maxSessions, in: 1...100_000_000),
        .number("max-body-bytes", "N", help: "Largest request body; larger gets 413 (default {default}).", \.limits.maxBodyBytes, in: 2...(64 << 20)),
        .number("max-connections", "N", help: "Open connections at most, and no more than the descriptor limit allows (default {default}).",
                \.limits.maxConnections, in: 1...1_000_000),
        .number("max-connections-per-ip", "N", help: "Connections from one client address (IPv6: its /64) at most, 0 for no limit; --trusted-proxy peers are exempt (default {default}).",
                \.limits.maxConnectionsPerIP, in: 0...1_000_000),
        .number("create-rate", "N", help: "Sessions one client address (IPv6: its /64) may create per second; more get 429; 0 = no limit (default {default}).",
                \.limits.createRate, in: 0...1_000_000),
        .number("create-burst", "N", help: "Sessions one client address may create at once before --create-rate applies (default {default}).",
                \.limits.createBurst, in: 1...1_000_000),
        .number("max-watchers", "N", help: "Event streams, WebSockets and long-polls at most, and no more than the descriptor limit allows; more get 503 (default {default}).",
                \.limits.maxWatchers, in: 1...1_000_000),
        .number("max-watchers-per-session", "N", help: "Watchers of one session at most (default {default}).", \.limits.maxWatchersPerSession, in: 1...100_000),
        .number("socket-messages-per-second", "N", help: "Messages one WebSocket may send a second, and at once; more close it with 1008 (default {default}).",
                \.limits.socketMessagesPerSecond, in: 1...100_000),
        .number("max-wait", "S", help: "Longest long-poll wait honoured, in seconds (default {default}).", \.limits.maxWaitSeconds, in: 1...3600),
    ]
}
