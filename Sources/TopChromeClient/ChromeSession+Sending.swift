import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How a session's queue goes out: one request at a time, paced; the
/// reports that waited go as one batch, retried (with those that arrived
/// meanwhile) while the service is unreachable.
extension ChromeSession {
    func sendIfIdle() {
        guard !isSending else { return }
        isSending = true
        Task { await sendQueued() }
    }

    /// Sends the queue in order, one request at a time and not sooner than
    /// the interval after the last, until it is empty.
    func sendQueued() async {
        while !queue.isEmpty {
            await pace()
            guard !queue.isEmpty else { break }
            let operation = queue.removeFirst()
            lastSendStart = ContinuousClock.now
            switch operation.kind {
            case let .scroll(batch):
                await sendReport(batch)
            case let .command(command, waiter):
                await sendCommand(command, waiter: waiter)
            }
            doneThrough = max(doneThrough, operation.ticket)
            finishFlushes()
        }
        isSending = false
        doneThrough = lastTicket
        finishFlushes()
    }

    /// Waits out the rest of the interval since the last request started;
    /// reports arriving meanwhile replace the one queued.
    func pace() async {
        // On a socket nothing waits: a message costs the service no request.
        guard !hurry, socketLink == nil, let lastSendStart else { return }
        let interval = Duration.nanoseconds(Int64(max(0, client.configuration.minimumSendInterval) * 1e9))
        let due = lastSendStart + interval
        if ContinuousClock.now < due {
            try? await Task.sleep(until: due, clock: .continuous)
        }
    }

    func finishFlushes() {
        let ready = flushWaiters.filter { $0.value.ticket <= doneThrough || ending != nil }
        for (key, waiter) in ready {
            flushWaiters[key] = nil
            waiter.continuation.resume()
        }
    }

    func sendCommand(_ command: Command, waiter: UInt64?) async {
        if let waiter, waiters[waiter] == nil { return }  // cancelled meanwhile
        let task = Task { try await send(command) }
        if let waiter { inFlight = (waiter, task) }
        let result = await task.result
        inFlight = nil
        let continuation = waiter.flatMap { waiters.removeValue(forKey: $0) }
        switch result {
        case let .success(state):
            continuation?.resume(returning: state)
        case let .failure(error):
            if case let .some(.sessionGone(id)) = error as? TopChromeError, case .delete = command {
                end(with: .sessionGone(id: id), streamsFinishing: false)
                continuation?.resume(returning: nil)
                return
            }
            if let error = error as? TopChromeError {
                if case .sessionGone = error { end(with: error) }
                if waiter == nil { tellFailure(error) }
            }
            continuation?.resume(throwing: error)
        }
    }

    func send(_ command: Command) async throws -> SessionState? {
        let path = "v1/sessions/\(id)"
        let change: Change
        switch command {
        case let .inset(inset):
            change = Change(type: "inset", method: "PUT", path: path + "/inset", body: try ChromeService.encode(InsetBody(inset: inset)))
        case let .behavior(settings):
            change = Change(type: "behavior", method: "PUT", path: path + "/behavior", body: try ChromeService.encode(settings))
        case .disappear:
            change = Change(type: "disappear", method: "POST", path: path + "/disappear", body: nil)
        case .read:
            change = Change(type: nil, method: "GET", path: path, body: nil)
        case .delete:
            _ = try await client.send(client.request("DELETE", path), sessionID: id)
            end(with: .sessionGone(id: id), streamsFinishing: false)
            return nil
        }
        let state = try ChromeService.decodeState(try await sendUntilDone(change))
        learn(state)
        return state
    }

    /// A change as a socket message (`type`, nil: HTTP only) and as its HTTP request.
    struct Change {
        var type: String?
        var method: String
        var path: String
        var body: Data?
    }

    /// One attempt: on the session's socket while one is open, else over HTTP.
    func attempt(_ change: Change) async throws -> ChromeService.Outcome {
        if let type = change.type, let socketLink { return await socketLink.attempt(type, body: change.body) }
        return try await client.attempt(client.request(change.method, change.path, body: change.body), sessionID: id)
    }

    /// `attempt` until it succeeds, fails for good, or the retries run out
    /// (a retry after a socket was cut goes over HTTP, or a new socket).
    func sendUntilDone(_ change: Change) async throws -> Data {
        try await client.retrying { try await self.attempt(change) }
    }

    /// Sends one batch, retrying while the service is out of reach (for
    /// `reportRetention`); a retry also carries the reports that arrived
    /// meanwhile, as many as fit in one body. A batch the service calls
    /// stale (its seqs not above one it applied: another life of this
    /// session numbered higher) is numbered above that and sent once more;
    /// one it finds too large (413) goes again as two halves, in order.
    func sendReport(_ batch: ScrollBatch) async {
        var batch = batch
        // A retry keeps its seqs: if the first try did arrive, the service
        // ignores the second as stale instead of applying it twice.
        var isRepeat = false
        var renumbered = false
        var retry = 0
        var firstFailure: ContinuousClock.Instant?
        while ending == nil {
            let outcome: ChromeService.Outcome
            do {
                let body = try batch.body()
                outcome = try await attempt(Change(type: "scroll", method: "POST", path: "v1/sessions/\(id)/scroll", body: body))
            } catch {
                failReport(error, seqs: batch.seqs, count: batch.count)
                return
            }
            switch outcome {
            case let .success(data, _, staleReports):
                let state = try? ChromeService.decodeState(data)
                if let state { learn(state) }
                // Only a batch stale as a whole is sent again: one partly
                // applied would be applied twice.
                guard staleReports == batch.count, !isRepeat else {
                    tell(.reportsDelivered)
                    return
                }
                // Numbered below what the service applied: renumber and send
                // once more (only once: a second stale answer means another
                // client is numbering this session, and its reports win).
                let seq = batch.lastSeq.map(String.init) ?? "?"
                client.log("session \(id): report \(seq) was stale (the service applied \(state?.lastSeq.map(String.init) ?? "?")); sending it above that")
                guard !renumbered else {
                    failReport(TopChromeError.malformedResponse("report \(seq) ignored as stale twice"), seqs: batch.seqs, count: batch.count)
                    return
                }
                renumbered = true
                batch.renumber(nextSeq)
            case let .failure(.rejected(problem)) where problem.status == 413 && batch.count > 1:
                // The service's limit is below ours: learn it (a proxy's 413
                // names none; then halve), and send what was refused in halves.
                bodyLimit = min(bodyLimit, problem.maxBodyBytes ?? batch.bodyBytes / 2)
                client.log("session \(id): \(batch.count) reports were too large for one request; sending them in halves")
                let (first, rest) = batch.halves()
                await sendReport(first)
                await sendReport(rest)
                return
            case let .failure(error):
                if case .sessionGone = error { end(with: error) } else { failReport(error, seqs: batch.seqs, count: batch.count) }
                return
            case let .retryable(error, retryAfter):
                let since = firstFailure ?? ContinuousClock.now
                firstFailure = since
                guard ContinuousClock.now - since < Self.duration(seconds: client.configuration.reportRetention) else {
                    failReport(error, seqs: batch.seqs, count: batch.count)
                    return
                }
                client.log("session \(id): report failed (\(error)); retrying")
                waitingToRetry = batch
                dropReportsBeyondBound()
                do {
                    try await client.configuration.retry.pause(retry: retry, retryAfter: retryAfter)
                } catch {
                    let kept = waitingToRetry ?? batch
                    waitingToRetry = nil
                    failReport(error, seqs: kept.seqs, count: kept.count)
                    return
                }
                // What the bound left of it while it waited.
                batch = waitingToRetry ?? batch
                waitingToRetry = nil
                if batch.count == 0 { return }  // all of it dropped: the queue goes on
                retry += 1
                isRepeat = true
                if case let .scroll(later) = queue.first?.kind, batch.canTake(later, within: bodyLimit),
                   batch.count + later.count <= client.configuration.maximumQueuedReports {
                    let newer = queue.removeFirst()
                    doneThrough = max(doneThrough, newer.ticket - 1)
                    batch.append(later)
                }
            }
        }
    }

    /// An outage longer than the queue keeps: the oldest reports are
    /// dropped (the batch waiting to be retried first, then the queued
    /// ones) and told as lost, so the reports waiting stay within
    /// `maximumQueuedReports`, besides the one request on the wire.
    /// Dropping a newer one instead would leave the service short of the
    /// newest state.
    func dropReportsBeyondBound() {
        // A batch on the wire is not counted: it cannot be shortened, and
        // dropping newer reports in its place would lose the newest state.
        var excess = (waitingToRetry?.count ?? 0) - client.configuration.maximumQueuedReports
        for case let .scroll(batch) in queue.map(\.kind) { excess += batch.count }
        guard excess > 0 else { return }
        var dropped: [UInt64] = []
        if var waiting = waitingToRetry {
            dropped = waiting.removeOldest(min(excess, waiting.count))
            excess -= dropped.count
            waitingToRetry = waiting
        }
        var index = 0
        while excess > 0, index < queue.count {
            guard case var .scroll(batch) = queue[index].kind else {
                index += 1
                continue
            }
            let seqs = batch.removeOldest(min(excess, batch.count))
            dropped += seqs
            excess -= seqs.count
            if batch.count == 0 {
                queue.remove(at: index)
            } else {
                queue[index].kind = .scroll(batch)
                index += 1
            }
        }
        failReport(TopChromeError.reportsDropped(dropped.count), seqs: dropped, count: dropped.count)
    }

    func failReport(_ error: any Error, seqs: [UInt64], count: Int) {
        reportFailure = error
        client.log("session \(id): \(count) report(s) lost: \(error)")
        let reason = error as? TopChromeError ?? .transport(error)
        tell(.reportsLost(reason, seqs: seqs, count: count))
    }

    func tellFailure(_ error: TopChromeError) {
        tell(.failed(error))
    }

    func tell(_ news: SessionNews) {
        for observe in observers.values { observe(news) }
    }

    static func duration(seconds value: Double) -> Duration {
        value.isFinite ? .nanoseconds(Int64(max(0, value) * 1e9)) : .seconds(Int64.max / 2)
    }

    func nextSeq() -> UInt64 {
        lastSeq = min(lastSeq + 1, (1 << 53) - 1)
        return lastSeq
    }
}
