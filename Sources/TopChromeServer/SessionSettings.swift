import TopChromeCore

/// The sessions' own rules: when the island shows, how long an untouched
/// session lives, and how often its watchers hear that the stream is alive.
public struct SessionSettings: Sendable, Equatable {
    public var revealThreshold = ChromeRules.defaultRevealThreshold
    /// Seconds a session may stay untouched before it is dropped; 0 = never.
    public var ttl = 3600
    /// Seconds between heartbeat comments on event streams.
    public var heartbeatSeconds = 15

    /// Nil when sessions never expire.
    var idleTimeout: Duration? { ttl > 0 ? .seconds(ttl) : nil }

    static let options: [ServiceConfiguration.Option] = [
        .init(name: "reveal-threshold", placeholder: "PT", help: "Island shows while offset <= this (default {default}).", default: { $0.sessions.revealThreshold.shown }) { value, source, config throws(ServiceConfiguration.UsageError) in
            guard let number = Double(value), number.isFinite, abs(number) <= 10_000 else {
                throw .init(description: "\(source) must be a number from -10000 to 10000, not '\(value)'")
            }
            config.sessions.revealThreshold = number
        },
        .number("session-ttl", "S", help: "Seconds idle before a session is dropped; 0 = never (default {default}).", \.sessions.ttl, in: 0...(10 * 365 * 86_400)),
        .number("heartbeat", "S", help: "Seconds between heartbeats on event streams and pings on WebSockets (default {default}).", \.sessions.heartbeatSeconds, in: 1...3600),
    ]
}
