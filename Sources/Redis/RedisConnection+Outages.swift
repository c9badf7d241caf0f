/// Connecting, and dropping a connection: what waited fails, and a new
/// connection is tried after a backoff.
extension RedisConnection {
    func startConnecting(now: ContinuousClock.Instant, _ outcome: inout Outcome) {
        do {
            let socket = try HiredisSocket(connectingTo: node, tls: configuration.tls)
            for request in setup { socket.append(request.bytes) }
            backlog = true
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

    func drop(_ cause: Drop, now: ContinuousClock.Instant, _ outcome: inout Outcome) {
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
    func noteFailure(_ cause: Drop, wasServing: Bool, _ outcome: inout Outcome) {
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

    func shutDown(_ outcome: inout Outcome) {
        if case .ready = phase { outcome.disconnected = true }
        failPending(with: .connectionLost, &outcome)
        phase = .closed
    }

    func failPending(with error: RedisError, _ outcome: inout Outcome) {
        for entry in pending.removeAll() {
            if case .caller(let completion) = entry.kind { outcome.replies.append(.reply(completion, .failure(error), roundTrip: nil)) }
        }
        earliestDeadline = nil
        setupDeadline = nil
        outgoing.removeAll(keepingCapacity: true)
        backlog = false
        hasOutput = false
    }

    func backOff(now: ContinuousClock.Instant) {
        phase = .waiting(until: now + configuration.reconnectBackoff.delay(attempt: attempt))
        attempt += 1
    }

    /// A sharded pub/sub push, as RESP2 carries it: an array that a reply
}
