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
/// Callers never block: a command is appended to hiredis's output buffer
/// under a short lock and the connection's own I/O thread writes it, reads
/// replies and hands each to the oldest waiting command (Redis answers in
/// order). A command whose deadline passes fails with `.timeout` and its
/// late reply is skipped; when the connection drops every waiting command
/// fails with `.connectionLost`, and the connection comes back in the
/// background with jittered backoff, meanwhile refusing commands with
/// `.unavailable`.
public final class RedisConnection: @unchecked Sendable {
    public let node: RedisNode
    private let configuration: RedisConfiguration
    private let setup: [RESPRequest]
    /// Set for a subscriber's connection (see `PushEvent`).
    private let pushes: (@Sendable (PushEvent) -> Void)?
    let wakePipe = WakePipe()
    private let lock = PthreadLock()

    // Guarded by `lock`.
    private var phase = Phase.starting
    private var pending = FIFO<Pending>()
    /// Commands sent before the first connect began, appended after the setup commands.
    private var unsent: [RESPRequest] = []
    private var setupDeadline: ContinuousClock.Instant?
    private var earliestDeadline: ContinuousClock.Instant?
    private var hasOutput = false
    private var wakeRequested = false
    private var closeRequested = false
    private var attempt = 0
    private var everConnected = false
    private var lastFailure: String?
    /// The failure last reported through `connectionEvents` and not yet
    /// followed by a recovery: each change is reported once, not each retry.
    private var reportedOutage: Outage?

    private enum Outage { case unreachable, refused }
    /// When the server last sent anything: a subscriber's connection pings after
    /// a quiet `commandTimeout`, or it would never notice a server gone silent.
    private var lastHeard = ContinuousClock.now

    private enum Phase {
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

    private struct Pending {
        enum Kind {
            case caller(RedisCompletion)
            /// A reply nobody waits for any more (deadline passed) or ever did (`ASKING`).
            case skip
        }

        var kind: Kind
        let deadline: ContinuousClock.Instant
        let sentAt: ContinuousClock.Instant
    }

    /// Why a connection is being dropped.
    private struct Drop: Error {
        let reason: String
        /// The server refused a setup command: retries will not fix it by themselves.
        var refused = false
    }

    /// What the I/O thread does after releasing the lock.
    private struct Outcome {
        /// Replies and pushes, in the order the server sent them.
        var replies: [Delivery] = []
        var roundTrips: [Duration] = []
        var connected = false
        var reconnected = false
        var disconnected = false
        var event: RedisConnectionEvent.Change?
    }

    private enum Delivery {
        case reply(RedisCompletion, Result<RESPValue, RedisError>)
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
        var setup: [RESPRequest] = []
        if let password = configuration.password {
            setup.append(RESPRequest(["AUTH"] + (configuration.username.map { [$0] } ?? []) + [password]))
        }
        if pushes == nil { setup += configuration.setupCommands.map { RESPRequest($0) } }
        self.setup = setup.isEmpty ? [RESPRequest(["PING"])] : setup
        startIOThread { self.run() }
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

    private static let asking = RESPRequest(["ASKING"])
    private static let ping = RESPRequest(["PING"])

    /// Appends a command whose reply nobody waits for: `SUNSUBSCRIBE`, whose
    /// confirmation is a push like the server's own. Dropped when there is no
    /// connection (its subscriptions went with it).
    func sendUnanswered(_ request: RESPRequest) {
        let wake: Bool = lock.withLock {
            guard !closeRequested else { return false }
            switch phase {
            case .starting: unsent.append(request)
            case .connecting(let socket, _, _), .ready(let socket):
                guard (try? socket.append(request)) != nil else { return false }
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
        let deadline = deadline ?? now + configuration.commandTimeout
        enum Queued { case refused, queued, queuedAndWake }
        let queued: Queued = lock.withLock {
            guard !closeRequested else { return .refused }
            let socket: HiredisSocket?
            switch phase {
            case .starting: socket = nil
            case .connecting(let connecting, _, _): socket = connecting
            case .ready(let ready): socket = ready
            case .waiting, .closed: return .refused
            }
            do {
                if asking {
                    if let socket { try socket.append(Self.asking) } else { unsent.append(Self.asking) }
                    pending.append(Pending(kind: .skip, deadline: deadline, sentAt: now))
                }
                if let socket { try socket.append(request) } else { unsent.append(request) }
            } catch {
                return .refused
            }
            pending.append(Pending(kind: .caller(completion), deadline: deadline, sentAt: now))
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

    // MARK: The I/O thread

    private func run() {
        while let (fd, events, timeout) = lock.withLock({ pollPlan(now: .now) }) {
            var fds = [pollfd(fd: wakePipe.readEnd, events: Int16(POLLIN), revents: 0)]
            if let fd { fds.append(pollfd(fd: fd, events: events, revents: 0)) }
            _ = poll(&fds, nfds_t(fds.count), timeout)
            if fds[0].revents != 0 { wakePipe.drain() }
            let revents = fds.count > 1 ? fds[1].revents : 0
            let outcome = lock.withLock { step(revents: revents, now: .now) }
            report(outcome)
        }
    }

    /// What to wait for next, or nil once closed.
    private func pollPlan(now: ContinuousClock.Instant) -> (Int32?, Int16, Int32)? {
        var wakeAt = [earliestDeadline, setupDeadline].compactMap { $0 }.min()
        if let oldest = pending.first { wakeAt = min(wakeAt ?? oldest.deadline, oldest.deadline + configuration.commandTimeout) }
        switch phase {
        case .closed:
            return nil
        case .starting:
            return (nil, 0, 0)
        case .waiting(let until):
            return (nil, 0, milliseconds(from: now, to: min(until, wakeAt ?? until)))
        case .connecting(let socket, false, _):
            return (socket.fd, Int16(POLLOUT), milliseconds(from: now, to: wakeAt))
        case .connecting(let socket, true, _), .ready(let socket):
            if let heartbeatAt { wakeAt = min(wakeAt ?? heartbeatAt, heartbeatAt) }
            return (socket.fd, socket.pollEvents(hasOutput: hasOutput), milliseconds(from: now, to: wakeAt))
        }
    }

    /// When an idle subscriber's connection pings next.
    private var heartbeatAt: ContinuousClock.Instant? {
        guard pushes != nil, case .ready = phase, pending.isEmpty else { return nil }
        return lastHeard + configuration.commandTimeout
    }

    private func milliseconds(from now: ContinuousClock.Instant, to instant: ContinuousClock.Instant?) -> Int32 {
        guard let instant else { return -1 }
        let (seconds, attoseconds) = (instant - now).components
        if seconds < 0 || (seconds == 0 && attoseconds <= 0) { return 0 }
        return Int32(clamping: seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
    }

    /// One turn of the loop: connect, write, read, expire; under the lock.
    private func step(revents: Int16, now: ContinuousClock.Instant) -> Outcome {
        var outcome = Outcome()
        wakeRequested = false
        if closeRequested {
            shutDown(&outcome)
            return outcome
        }
        do throws(Drop) {
            switch phase {
            case .starting:
                startConnecting(now: now, &outcome)
            case .waiting(let until) where until <= now:
                startConnecting(now: now, &outcome)
            case .connecting(let socket, let open, let setupLeft):
                if !open {
                    guard revents != 0 else { break }
                    if let failure = socket.connectError() { throw Drop(reason: failure.reason) }
                    phase = .connecting(socket, open: true, setupLeft: setupLeft)
                }
                try transfer(socket, revents: revents, now: now, &outcome)
            case .ready(let socket):
                try transfer(socket, revents: revents, now: now, &outcome)
                if let heartbeatAt, heartbeatAt <= now {
                    do { try socket.append(Self.ping) } catch { throw Drop(reason: error.reason) }
                    pending.append(Pending(kind: .skip, deadline: now + configuration.commandTimeout, sentAt: now))
                    hasOutput = true
                }
            case .waiting, .closed:
                break
            }
            try expire(now: now, &outcome)
        } catch {
            drop(error, now: now, &outcome)
        }
        return outcome
    }

    private func transfer(_ socket: HiredisSocket, revents: Int16, now: ContinuousClock.Instant, _ outcome: inout Outcome) throws(Drop) {
        var replies: [RESPValue] = []
        do {
            if hasOutput { hasOutput = try !socket.flush() }
            guard revents & Int16(POLLIN | POLLERR | POLLHUP) != 0 else { return }
            try socket.fill()
            lastHeard = now
            while let reply = try socket.nextReply() { replies.append(reply) }
        } catch {
            throw Drop(reason: error.reason, refused: error.refused)
        }
        for reply in replies { try deliver(reply, now: now, &outcome) }
    }

    private func deliver(_ reply: RESPValue, now: ContinuousClock.Instant, _ outcome: inout Outcome) throws(Drop) {
        if case .connecting(let socket, _, let setupLeft) = phase {
            // A server still loading its data answers LOADING to most
            // commands, PING among them: it is there, and the commands that
            // meet LOADING are tried again by the client within their deadline.
            if case .error(let message) = reply, !message.hasPrefix("LOADING") {
                throw Drop(reason: "setup command refused: \(message)", refused: true)
            }
            if setupLeft > 1 {
                phase = .connecting(socket, open: true, setupLeft: setupLeft - 1)
            } else {
                phase = .ready(socket)
                setupDeadline = nil
                attempt = 0
                lastFailure = nil
                outcome.connected = true
                outcome.reconnected = everConnected
                if reportedOutage != nil {
                    outcome.event = .recovered
                } else if !everConnected {
                    outcome.event = .connected
                }
                reportedOutage = nil
                everConnected = true
            }
            return
        }
        if pushes != nil, let push = Self.push(reply) {
            outcome.replies.append(.push(push))
            return
        }
        guard let oldest = pending.popFirst() else { throw Drop(reason: "a reply no command asked for") }
        switch oldest.kind {
        case .caller(let completion):
            outcome.replies.append(.reply(completion, .success(reply)))
            outcome.roundTrips.append(now - oldest.sentAt)
        case .skip:
            break
        }
    }

    /// Fails the commands whose deadline passed; drops a connection whose
    /// setup timed out or whose oldest command went a whole timeout past
    /// its deadline without a reply (the server stopped answering).
    private func expire(now: ContinuousClock.Instant, _ outcome: inout Outcome) throws(Drop) {
        if let setupDeadline, setupDeadline <= now {
            throw Drop(reason: "connection setup timed out")
        }
        if let oldest = pending.first, oldest.deadline + configuration.commandTimeout <= now {
            throw Drop(reason: "no reply within the deadline and one more timeout")
        }
        guard let earliest = earliestDeadline, earliest <= now else { return }
        var next: ContinuousClock.Instant?
        for index in pending.indices {
            let entry = pending[index]
            switch entry.kind {
            case .caller(let completion) where entry.deadline <= now:
                outcome.replies.append(.reply(completion, .failure(.timeout)))
                pending[index].kind = .skip
            case .caller:
                next = min(next ?? entry.deadline, entry.deadline)
            case .skip:
                break
            }
        }
        earliestDeadline = next
    }

    /// Opens a socket and queues the setup commands, then any commands
    /// sent before the first connect.
    private func startConnecting(now: ContinuousClock.Instant, _ outcome: inout Outcome) {
        let waiting = unsent
        unsent = []
        do {
            let socket = try HiredisSocket(connectingTo: node, tls: configuration.tls)
            for request in setup + waiting { try socket.append(request) }
            setupDeadline = now + configuration.commandTimeout
            hasOutput = true
            phase = .connecting(socket, open: false, setupLeft: setup.count)
        } catch {
            lastFailure = error.reason
            noteFailure(Drop(reason: error.reason), wasServing: false, &outcome)
            failPending(with: .unavailable, &outcome)
            backOff(now: now)
        }
    }

    private func drop(_ cause: Drop, now: ContinuousClock.Instant, _ outcome: inout Outcome) {
        var sent = true
        var wasServing = false
        switch phase {
        case .ready:
            outcome.disconnected = true
            wasServing = true
        case .connecting(_, let open, _): sent = open
        case .starting, .waiting, .closed: break
        }
        lastFailure = cause.reason
        noteFailure(cause, wasServing: wasServing, &outcome)
        failPending(with: sent ? .connectionLost : .unavailable, &outcome)
        backOff(now: now)
    }

    /// Reports a failure that changes what an operator knows: a serving
    /// connection lost, or an outage that began or changed its kind (from
    /// unreachable to refused, or back), not another failed retry.
    private func noteFailure(_ cause: Drop, wasServing: Bool, _ outcome: inout Outcome) {
        let kind: Outage = cause.refused ? .refused : .unreachable
        if wasServing {
            outcome.event = .lost(reason: cause.reason)
        } else if reportedOutage != kind {
            outcome.event = cause.refused ? .refused(reason: cause.reason) : .unreachable(reason: cause.reason)
        } else {
            return
        }
        reportedOutage = kind
    }

    private func shutDown(_ outcome: inout Outcome) {
        if case .ready = phase { outcome.disconnected = true }
        failPending(with: .connectionLost, &outcome)
        phase = .closed
    }

    private func failPending(with error: RedisError, _ outcome: inout Outcome) {
        for entry in pending.removeAll() {
            if case .caller(let completion) = entry.kind { outcome.replies.append(.reply(completion, .failure(error))) }
        }
        earliestDeadline = nil
        setupDeadline = nil
        unsent = []
        hasOutput = false
    }

    private func backOff(now: ContinuousClock.Instant) {
        phase = .waiting(until: now + configuration.reconnectBackoff.delay(attempt: attempt))
        attempt += 1
    }

    /// A sharded pub/sub push, as RESP2 carries it: an array that a reply
    /// to SSUBSCRIBE or PING never looks like.
    private static func push(_ reply: RESPValue) -> PushEvent? {
        guard case .array(let parts) = reply, parts.count == 3, case .bulk(let channel) = parts[1] else { return nil }
        switch (parts[0].string, parts[2]) {
        // `message`: a plain `SUBSCRIBE`'s, which only a sentinel's listener makes.
        case ("smessage", .bulk(let payload)), ("message", .bulk(let payload)): return .message(channel: channel, payload: payload)
        case ("sunsubscribe", .integer): return .unsubscribed(channel: channel)
        default: return nil
        }
    }

    private func report(_ outcome: Outcome) {
        if let change = outcome.event {
            configuration.connectionEvents(RedisConnectionEvent(node: node, isSubscriber: pushes != nil, change: change))
        }
        let metrics = configuration.metrics
        if outcome.disconnected { metrics.disconnected(node) }
        if outcome.reconnected { metrics.reconnected(node) }
        if outcome.connected {
            if let pushes { pushes(.connected) } else { configuration.connected(node) }
        }
        for roundTrip in outcome.roundTrips { metrics.roundTrip(node, roundTrip) }
        for delivery in outcome.replies {
            switch delivery {
            case .reply(let completion, let result):
                if case .failure(let error) = result { metrics.failed(node, error) }
                completion(result)
            case .push(let event):
                pushes?(event)
            }
        }
        if outcome.disconnected { pushes?(.disconnected) }
    }
}
