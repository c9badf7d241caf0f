#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Locking

/// A reply, or why there is none.
public typealias RedisCompletion = @Sendable (Result<RESPValue, RedisError>) -> Void

/// One pipelined connection to one Redis server, kept up until `close()`.
///
/// Callers never block: a command's encoding is appended to `outgoing`
/// under a short lock, and the connection's own I/O thread takes it from
/// there, writes it, reads replies and converts them outside the lock, then
/// hands each to the oldest waiting command (Redis answers in order). A command whose deadline passes fails with `.timeout` and its
/// late reply is skipped; when the connection drops every waiting command
/// fails with `.connectionLost`, and the connection comes back in the
/// background with jittered backoff, meanwhile refusing commands with
/// `.unavailable`.
public final class RedisConnection: @unchecked Sendable {
    public let node: RedisNode
    let configuration: RedisConfiguration
    let setup: [RESPRequest]
    /// The setup commands, counted from the last, whose refusal does not
    /// fail the connection: its names (`CLIENT SETNAME`, `CLIENT SETINFO`),
    /// which it sends after the others.
    let optionalSetup: Int
    /// Set for a subscriber's connection (see `PushEvent`).
    let pushes: (@Sendable (PushEvent) -> Void)?
    /// The metrics' series of this connection's node (`RedisMetrics.series`).
    let metricsSeries: Int
    let wakePipe = WakePipe()
    let lock = PthreadLock()

    // Guarded by `lock`.
    var phase = Phase.starting
    var pending = FIFO<Pending>()
    /// Commands appended since the I/O thread last took them, in `pending`'s
    /// order; while connecting, they follow the setup commands.
    var outgoing: [UInt8] = []
    var setupDeadline: ContinuousClock.Instant?
    var earliestDeadline: ContinuousClock.Instant?
    var hasOutput = false
    var wakeRequested = false
    var closeRequested = false
    var attempt = 0
    var everConnected = false
    var lastFailure: String?
    /// The failure last reported through `connectionEvents` and not yet
    /// followed by a recovery: each change is reported once, not each retry.
    var reportedOutage: Outage?

    enum Outage { case unreachable, refused }
    /// When the server last sent anything: a subscriber's connection pings after
    /// a quiet `commandTimeout`, or it would never notice a server gone silent.
    var lastHeard = ContinuousClock.now

    // The I/O thread's alone: read and written outside the lock.
    /// What the I/O thread took from `outgoing` (swapped, so neither allocates again).
    var taken: [UInt8] = []
    /// Replies read and converted outside the lock, handed over under it.
    var received: [RESPValue] = []
    /// The socket's output buffer still holds bytes the socket did not take.
    var backlog = false
    /// The last read brought bytes.
    var heard = false

    enum Phase {
        /// Until the I/O thread makes the first connect (which may resolve a
        /// host name, and so block): commands wait in `unsent`.
        case starting
        /// Connecting, then waiting for the setup commands' replies, which
        /// come before any caller's.
        case connecting(HiredisSocket, open: Bool, setupLeft: Int)
        case ready(HiredisSocket)
        case waiting(until: ContinuousClock.Instant)
        case closed
    }

    struct Pending {
        enum Kind {
            case caller(RedisCompletion)
            /// A reply nobody waits for any more (deadline passed) or ever did (`ASKING`).
            case skip
        }

        var kind: Kind
        let deadline: ContinuousClock.Instant
        let sentAt: ContinuousClock.Instant
        /// For the round trip's metrics.
        var command = RedisCommandKind.other
    }

    /// Why a connection is being dropped.
    struct Drop: Error {
        let reason: String
        /// The server refused a setup command: retries will not fix it by themselves.
        var refused = false
    }

    /// What the I/O thread does after releasing the lock.
    struct Outcome {
        /// Replies and pushes, in the order the server sent them.
        var replies: [Delivery] = []
        var connected = false
        var reconnected = false
        var disconnected = false
        var event: RedisConnectionEvent.Change?

        mutating func clear() {
            replies.removeAll(keepingCapacity: true)
            (connected, reconnected, disconnected, event) = (false, false, false, nil)
        }
    }

    enum Delivery {
        /// `roundTrip`: for a reply, the time since its command was appended.
        case reply(RedisCompletion, Result<RESPValue, RedisError>, roundTrip: Duration?, command: RedisCommandKind = .other)
        case push(PushEvent)
    }

    /// What a subscriber's connection hands its owner besides replies, on its
    /// I/O thread, in the order the server sent it.
    enum PushEvent {
        /// The setup commands were answered: the connection is (again) usable.
        case connected
        /// The connection dropped; its subscriptions are gone with it.
        case disconnected
        /// An `smessage` push (or a plain `message`).
        case message(channel: [UInt8], payload: [UInt8])
        /// An `sunsubscribe` push: the answer to an `SUNSUBSCRIBE`, or the
        /// server dropping the subscription itself (its slot moved away).
        case unsubscribed(channel: [UInt8])
    }

    public convenience init(to node: RedisNode, configuration: RedisConfiguration = RedisConfiguration()) {
        self.init(to: node, configuration: configuration, pushes: nil)
    }

    /// With `pushes`, a connection for sharded pub/sub: `smessage` and
    /// `sunsubscribe` pushes go to `pushes` instead of a waiting command, an
    /// idle connection pings, and the setup is `AUTH` alone (a subscribed
    /// RESP2 connection refuses most commands, and functions are not its business).
    init(to node: RedisNode, configuration: RedisConfiguration, pushes: (@Sendable (PushEvent) -> Void)?) {
        self.node = node
        self.configuration = configuration
        self.pushes = pushes
        metricsSeries = configuration.metrics.series(node)
        var setup: [RESPRequest] = []
        if let password = configuration.password {
            setup.append(RESPRequest(["AUTH"] + (configuration.username.map { [$0] } ?? []) + [password]))
        }
        if pushes == nil { setup += configuration.setupCommands.map { RESPRequest($0) } }
        if setup.isEmpty { setup = [RESPRequest(["PING"])] }
        var names: [RESPRequest] = []
        if let name = configuration.clientName { names.append(RESPRequest(["CLIENT", "SETNAME", name])) }
        if let (library, version) = configuration.libraryNameAndVersion {
            names.append(RESPRequest(["CLIENT", "SETINFO", "LIB-NAME", library]))
            names.append(RESPRequest(["CLIENT", "SETINFO", "LIB-VER", version]))
        }
        self.setup = setup + names
        optionalSetup = names.count
        startIOThread(named: pushes == nil ? "redis-io" : "redis-pubsub") { self.run() }
    }

    /// Whether the connection is up and has answered its setup commands.
    public var isConnected: Bool {
        lock.withLock { if case .ready = phase { true } else { false } }
    }

    /// Whether the connection failed and has not served since (it may be
    /// trying again): not the case while a first connection is being made.
    public var isAway: Bool {
        lock.withLock {
            if case .ready = phase { return false }
            return lastFailure != nil
        }
    }

    /// Whether `close()` has taken effect: whatever waited has failed, and the
    /// I/O thread is on its way out (it still hands those failures over).
    var isClosed: Bool {
        lock.withLock { if case .closed = phase { true } else { false } }
    }

    /// Why the last connection attempt or connection failed, for readiness reports.
    /// For a connection that takes over a lost node's slots (a failover):
    /// its first connection counts as a reconnection, as the same node's
    /// coming back would. True when it is connected already, so the caller
    /// counts it now.
    func countsFirstConnectionAsReconnection() -> Bool {
        lock.withLock {
            if case .ready = phase { return true }
            everConnected = true
            return false
        }
    }

    /// Commands sent and not yet answered (a reply still awaited for one
    /// whose caller gave up counts too: it is on the wire).
    var commandsInFlight: Int {
        lock.withLock { pending.count }
    }

    public var lastFailureReason: String? {
        lock.withLock { lastFailure }
    }

    /// Sends one command; `completion` runs on the I/O thread, or on the
    /// caller's when the command is refused at once.
    public func send(_ arguments: [[UInt8]], deadline: ContinuousClock.Instant? = nil, completion: @escaping RedisCompletion) {
        send(RESPRequest(arguments), asking: false, deadline: deadline, completion: completion)
    }

    public func send(_ arguments: [String], deadline: ContinuousClock.Instant? = nil, completion: @escaping RedisCompletion) {
        send(RESPRequest(arguments), asking: false, deadline: deadline, completion: completion)
    }

    public func send(_ arguments: [String], deadline: ContinuousClock.Instant? = nil) async throws(RedisError) -> RESPValue {
        try await withCheckedContinuation { continuation in
            send(arguments, deadline: deadline) { continuation.resume(returning: $0) }
        }.get()
    }

    /// Stops the I/O thread; commands still waiting fail with `.connectionLost`.
    public func close() {
        let wake = lock.withLock {
            closeRequested = true
            return !wakeRequested
        }
        if wake { wakePipe.wake() }
    }

    static let asking = RESPRequest(["ASKING"])
    static let ping = RESPRequest(["PING"])

    /// Appends a command whose reply nobody waits for: `SUNSUBSCRIBE`, whose
    /// confirmation is a push like the server's own. Dropped when there is no
    /// connection (its subscriptions went with it).
    func sendUnanswered(_ request: RESPRequest) {
        let wake: Bool = lock.withLock {
            guard !closeRequested else { return false }
            switch phase {
            case .starting, .connecting, .ready: outgoing.append(contentsOf: request.bytes)
            case .waiting, .closed: return false
            }
            hasOutput = true
            guard !wakeRequested else { return false }
            wakeRequested = true
            return true
        }
        if wake { wakePipe.wake() }
    }

    /// Appends a command; with `asking`, `ASKING` goes right before it, as a
    /// cluster's `ASK` redirection requires.
    func send(_ request: RESPRequest, asking: Bool, deadline: ContinuousClock.Instant?, completion: @escaping RedisCompletion) {
        let now = ContinuousClock.now
        let command = RedisCommandKind(encoded: request.bytes)
        let deadline = deadline ?? now + configuration.commandTimeout
        enum Queued { case refused, queued, queuedAndWake }
        let queued: Queued = lock.withLock {
            guard !closeRequested else { return .refused }
            switch phase {
            case .starting, .connecting, .ready: break
            case .waiting, .closed: return .refused
            }
            if asking {
                outgoing.append(contentsOf: Self.asking.bytes)
                pending.append(Pending(kind: .skip, deadline: deadline, sentAt: now))
            }
            outgoing.append(contentsOf: request.bytes)
            pending.append(Pending(kind: .caller(completion), deadline: deadline, sentAt: now, command: command))
            hasOutput = true
            if earliestDeadline.map({ deadline < $0 }) ?? true { earliestDeadline = deadline }
            guard !wakeRequested else { return .queued }
            wakeRequested = true
            return .queuedAndWake
        }
        switch queued {
        case .refused:
            configuration.metrics.failed(node, .unavailable)
            completion(.failure(.unavailable))
        case .queuedAndWake:
            wakePipe.wake()
        case .queued:
            break
        }
    }
}
