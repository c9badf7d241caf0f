import Dispatch
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// How a client talks to Redis; the same for every node of a cluster.
public struct RedisConfiguration: Sendable {
    /// `AUTH` on every connection, before anything else (`requirepass`, or an ACL user).
    public var username: String?
    public var password: String?

    /// `AUTH` to the sentinels (their `requirepass`, or an ACL user of
    /// theirs), which need not be the data nodes' user.
    public var sentinelUsername: String?
    public var sentinelPassword: String?

    /// How every connection names itself (`CLIENT SETNAME`), so that an
    /// operator's `CLIENT LIST` tells this process's connections apart.
    /// Refused (an ACL without `+client|setname`), it is let be.
    public var clientName: String?
    /// The library and its version, for `CLIENT SETINFO LIB-NAME`/`LIB-VER`
    /// (Redis 7.2 and later; an older one refuses them, which is let be).
    public var libraryNameAndVersion: (name: String, version: String)?

    /// TLS on every connection (`rediss://`); nil for plain TCP.
    public var tls: RedisTLS?

    /// How long a command may wait for its reply when the caller gives no
    /// deadline. A command still unanswered one more timeout after its
    /// deadline means the server stopped answering: the connection is dropped.
    public var commandTimeout: Duration = .seconds(1)

    /// Commands run first on every (re)connection, pipelined before any
    /// caller's (e.g. `FUNCTION LOAD REPLACE …`). An error reply to one of
    /// them fails the connection attempt, which is then retried.
    public var setupCommands: [[[UInt8]]] = []

    /// Called once a connection has answered its setup commands, on every
    /// (re)connection, from the connection's I/O thread.
    public var connected: @Sendable (RedisNode) -> Void = { _ in }

    /// Told when a connection starts or stops serving, as an operator wants
    /// to hear of it: once per change, never per command or per retry.
    /// Called on the connection's I/O thread; must be quick.
    public var connectionEvents: @Sendable (RedisConnectionEvent) -> Void = { _ in }

    /// Told when the client learns that another node serves what a node
    /// served (a failover, slots moved, a switch Sentinel named) and when a
    /// lost primary is back as a replica: a lost connection alone does not
    /// say where the work went. Called from whichever thread learnt it.
    public var topologyChanged: @Sendable (RedisTopologyChange) -> Void = { _ in }

    /// Delays between reconnection attempts.
    public var reconnectBackoff = Backoff(base: .milliseconds(50), cap: .seconds(2))

    /// How many `MOVED`/`ASK` redirections one command may follow.
    public var maxRedirects = 5

    /// How often a cluster's slot map is reloaded even when no command met
    /// a redirection or a lost connection (as go-redis reloads a view older
    /// than 10 s): a failover or a slot moved is learnt before commands or
    /// subscriptions go on using the old node.
    public var slotMapRefreshInterval: Duration = .seconds(10)

    /// Connections to each node for commands, each with its own I/O thread
    /// (besides the one for changes followed by `WAIT`). A command goes by its
    /// key's slot, so one session's commands keep one connection and their
    /// order; with more than one, the replies of different sessions are read,
    /// decoded and answered on as many threads, where one would carry every
    /// request's reply alone. Calls waiting for one connection still leave
    /// in one write.
    public var connectionsPerNode = 1

    public var metrics = RedisMetrics()

    public init() {}
}

/// A connection that started or stopped serving, for the caller's logs.
public struct RedisConnectionEvent: Sendable, Equatable {
    public enum Change: Sendable, Equatable {
        /// The first connection, made without trouble.
        case connected
        /// No connection could be made (and none served since it was last
        /// reported); retried with backoff.
        case unreachable(reason: String)
        /// A connection that served was dropped; retried with backoff.
        case lost(reason: String)
        /// The server refused a setup command (`AUTH`, or one of
        /// `setupCommands`): retries fail the same way until someone fixes
        /// the password or the server.
        case refused(reason: String)
        /// Serving again after one of the failures above.
        case recovered
    }

    public let node: RedisNode
    /// A subscriber's connection (pub/sub), not one for commands: a node may have one of each.
    public let isSubscriber: Bool
    public let change: Change
}

/// Hooks for the caller's metrics; each is called on a connection's I/O
/// thread and must be quick.
public struct RedisMetrics: Sendable {
    /// Which of the caller's series a node's round trips count into (see
    /// `roundTrip`): asked once per connection, so that timing a reply
    /// looks nothing up.
    public var series: @Sendable (RedisNode) -> Int = { _ in 0 }
    /// Time from appending a command to reading its reply, for the series
    /// `series` gave the node and the command's kind.
    public var roundTrip: @Sendable (_ series: Int, RedisCommandKind, Duration) -> Void = { _, _, _ in }
    /// A command that ended without a reply (or with TRYAGAIN/CLUSTERDOWN).
    public var failed: @Sendable (RedisNode, RedisError) -> Void = { _, _ in }
    /// Redis answered a command with an error reply (its text, code first:
    /// `NOPERM …`, `OOM …`), which the caller gets as its reply.
    public var errorReply: @Sendable (RedisNode, String) -> Void = { _, _ in }
    /// A connection came back after it had been lost.
    public var reconnected: @Sendable (RedisNode) -> Void = { _ in }
    /// A connection was dropped (error, end of stream, unresponsive server).
    public var disconnected: @Sendable (RedisNode) -> Void = { _ in }
    /// A cluster redirected a command: `MOVED` (`asking` false) or `ASK`.
    public var redirected: @Sendable (_ asking: Bool) -> Void = { _ in }
    /// A subscriber's channel stopped being subscribed on `node` (its
    /// connection dropped, or the server dropped it as its slot moved).
    public var subscriptionLost: @Sendable (RedisNode) -> Void = { _ in }
    /// A subscriber's channel is subscribed again, now on `node`, after a loss.
    public var resubscribed: @Sendable (RedisNode) -> Void = { _ in }

    public init() {}
}

/// Capped exponential backoff with full jitter: attempt n waits a uniformly
/// random time between zero and min(cap, base · 2ⁿ), so that many clients
/// that lost the same server do not all come back at the same instant.
public struct Backoff: Sendable {
    public var base: Duration
    public var cap: Duration

    public init(base: Duration, cap: Duration) {
        self.base = base
        self.cap = cap
    }

    public func delay(attempt: Int, using generator: inout some RandomNumberGenerator) -> Duration {
        var random = generator.next()
        return delay(attempt: attempt, random: &random)
    }

    /// The delay drawn from the system's random source. Not through
    /// `SystemRandomNumberGenerator`: it is an empty struct, and every
    /// value of it sits at one address, so I/O threads backing off at once
    /// look to the thread sanitizer like a race on that address.
    public func delay(attempt: Int) -> Duration {
        var random: UInt64 = 0
        withUnsafeMutableBytes(of: &random) { _ = getentropy($0.baseAddress, $0.count) }
        return delay(attempt: attempt, random: &random)
    }

    private func delay(attempt: Int, random: inout UInt64) -> Duration {
        let doublings = min(max(attempt, 0), 30)
        let ceiling = min(cap, base * (1 << doublings))
        let nanoseconds = ceiling.components.seconds * 1_000_000_000 + ceiling.components.attoseconds / 1_000_000_000
        guard nanoseconds > 0 else { return .zero }
        // The bias of a remainder is below 2^-33 for any cap under a minute: no
        // matter for a jitter.
        return .nanoseconds(Int64(random % UInt64(nanoseconds + 1)))
    }
}

/// Runs `body` once `delay` has passed (a backoff before trying again), on
/// one of Dispatch's threads: nothing waits meanwhile.
package func after(_ delay: Duration, _ body: @escaping @Sendable () -> Void) {
    let (seconds, attoseconds) = delay.components
    let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
    DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds), execute: body)
}
