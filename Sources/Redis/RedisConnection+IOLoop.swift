#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The connection's own thread: it waits in `poll` for the socket or a
/// caller's wake-up, takes what callers appended under the lock, writes it,
/// reads and converts replies outside it, and hands replies over under it
/// again: a caller appending a command never waits for a socket's work.
extension RedisConnection {
    func run() {
        var fds: [pollfd] = []
        fds.reserveCapacity(2)
        // One for every turn, emptied after each: its list of replies keeps its room.
        var outcome = Outcome()
        while let (fd, events, timeout) = lock.withLock({ pollPlan(now: .now) }) {
            fds.removeAll(keepingCapacity: true)
            fds.append(pollfd(fd: wakePipe.readEnd, events: Int16(POLLIN), revents: 0))
            if let fd { fds.append(pollfd(fd: fd, events: events, revents: 0)) }
            _ = poll(&fds, nfds_t(fds.count), timeout)
            if fds[0].revents != 0 { wakePipe.drain() }
            let revents = fds.count > 1 ? fds[1].revents : 0
            turn(revents: revents, &outcome)
            report(outcome)
            outcome.clear()
        }
    }

    /// One turn of the loop: connect and take the output under the lock,
    /// write and read outside it, then hand replies over and expire under it.
    func turn(revents: Int16, _ outcome: inout Outcome) {
        guard let socket = lock.withLock({ prepare(revents: revents, now: .now, &outcome) }) else { return }
        var failure: Drop?
        do throws(Drop) { try transfer(socket, revents: revents) } catch { failure = error }
        taken.removeAll(keepingCapacity: true)
        lock.withLock { settle(failure, now: .now, &outcome) }
        received.removeAll(keepingCapacity: true)
    }

    /// What to wait for next, or nil once closed.
    func pollPlan(now: ContinuousClock.Instant) -> (Int32?, Int16, Int32)? {
        var wakeAt = earliestDeadline
        if let setupDeadline { wakeAt = min(wakeAt ?? setupDeadline, setupDeadline) }
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
    var heartbeatAt: ContinuousClock.Instant? {
        guard pushes != nil, case .ready = phase, pending.isEmpty else { return nil }
        return lastHeard + configuration.commandTimeout
    }

    func milliseconds(from now: ContinuousClock.Instant, to instant: ContinuousClock.Instant?) -> Int32 {
        guard let instant else { return -1 }
        let (seconds, attoseconds) = (instant - now).components
        if seconds < 0 || (seconds == 0 && attoseconds <= 0) { return 0 }
        return Int32(clamping: seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
    }

    /// Under the lock: connects, and for an open socket takes what callers
    /// appended and returns the socket to write and read; otherwise expires.
    func prepare(revents: Int16, now: ContinuousClock.Instant, _ outcome: inout Outcome) -> HiredisSocket? {
        wakeRequested = false
        if closeRequested {
            shutDown(&outcome)
            return nil
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
                swap(&outgoing, &taken)
                return socket
            case .ready(let socket):
                swap(&outgoing, &taken)
                return socket
            case .waiting, .closed:
                break
            }
            try expire(now: now, &outcome)
        } catch {
            drop(error, now: now, &outcome)
        }
        return nil
    }

    /// Outside the lock: writes what was taken (and what the socket did not
    /// take before), reads, and converts every reply the read brought.
    /// Replies converted before a failure are still handed over.
    func transfer(_ socket: HiredisSocket, revents: Int16) throws(Drop) {
        heard = false
        do {
            if !taken.isEmpty {
                socket.append(taken)
                backlog = true
            }
            if backlog { backlog = try !socket.flush() }
            guard revents & Int16(POLLIN | POLLERR | POLLHUP) != 0 else { return }
            try socket.fill()
            heard = true
            while let reply = try socket.nextReply() { received.append(reply) }
        } catch {
            throw Drop(reason: error.reason, refused: error.refused)
        }
    }

    /// Under the lock: hands the replies read to their commands, pings an
    /// idle subscriber's server, expires, and drops the connection on a failure.
    func settle(_ failure: Drop?, now: ContinuousClock.Instant, _ outcome: inout Outcome) {
        if heard { lastHeard = now }
        do throws(Drop) {
            for reply in received { try deliver(reply, now: now, &outcome) }
            if let failure { throw failure }
            if let heartbeatAt, heartbeatAt <= now {
                outgoing.append(contentsOf: Self.ping.bytes)
                pending.append(Pending(kind: .skip, deadline: now + configuration.commandTimeout, sentAt: now))
            }
            try expire(now: now, &outcome)
        } catch {
            drop(error, now: now, &outcome)
        }
        hasOutput = backlog || !outgoing.isEmpty
    }

    func deliver(_ reply: RESPValue, now: ContinuousClock.Instant, _ outcome: inout Outcome) throws(Drop) {
        if case .connecting(let socket, _, let setupLeft) = phase {
            // A server still loading its data answers LOADING to most
            // commands, PING among them: it is there, and the commands that
            // meet LOADING are tried again by the client within their deadline.
            if case .error(let message) = reply, !message.hasPrefix("LOADING"), setupLeft > optionalSetup {
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
            outcome.replies.append(.reply(completion, .success(reply), roundTrip: now - oldest.sentAt, command: oldest.command))
        case .skip:
            break
        }
    }

    /// Fails the commands whose deadline passed; drops a connection whose
    /// setup timed out or whose oldest command went a whole timeout past
    /// its deadline without a reply (the server stopped answering).
    func expire(now: ContinuousClock.Instant, _ outcome: inout Outcome) throws(Drop) {
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
                outcome.replies.append(.reply(completion, .failure(.timeout), roundTrip: nil))
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
    static func push(_ reply: RESPValue) -> PushEvent? {
        guard case .array(let parts) = reply, parts.count == 3, case .bulk(let channel) = parts[1] else { return nil }
        switch (parts[0].string, parts[2]) {
        // `message`: a plain `SUBSCRIBE`'s, which only a sentinel's listener makes.
        case ("smessage", .bulk(let payload)), ("message", .bulk(let payload)): return .message(channel: channel, payload: payload)
        case ("sunsubscribe", .integer): return .unsubscribed(channel: channel)
        default: return nil
        }
    }

    func report(_ outcome: Outcome) {
        if let change = outcome.event {
            configuration.connectionEvents(RedisConnectionEvent(node: node, isSubscriber: pushes != nil, change: change))
        }
        let metrics = configuration.metrics
        if outcome.disconnected { metrics.disconnected(node) }
        if outcome.reconnected { metrics.reconnected(node) }
        if outcome.connected {
            if let pushes { pushes(.connected) } else { configuration.connected(node) }
        }
        for delivery in outcome.replies {
            switch delivery {
            case .reply(let completion, let result, let roundTrip, let command):
                if let roundTrip { metrics.roundTrip(metricsSeries, command, roundTrip) }
                switch result {
                case .failure(let error): metrics.failed(node, error)
                case .success(.error(let message)): metrics.errorReply(node, message)
                case .success: break
                }
                completion(result)
            case .push(let event):
                pushes?(event)
            }
        }
        if outcome.disconnected { pushes?(.disconnected) }
    }
}
