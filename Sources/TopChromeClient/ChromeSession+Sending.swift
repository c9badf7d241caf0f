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
        guard !hurry, let lastSendStart else { return }
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

    func send(_ command: Command) async throws -> ChromeState? {
        let path = "v1/sessions/\(id)"
        let request: URLRequest
        switch command {
        case let .inset(inset):
            request = try await client.request("PUT", path + "/inset", body: TopChromeClient.encode(InsetBody(inset: inset)))
        case let .behavior(settings):
            request = try await client.request("PUT", path + "/behavior", body: TopChromeClient.encode(settings))
        case .disappear:
            request = try await client.request("POST", path + "/disappear")
        case .read:
            request = try await client.request("GET", path)
        case .delete:
            _ = try await client.send(client.request("DELETE", path), sessionID: id)
            end(with: .sessionGone(id: id), streamsFinishing: false)
            return nil
        }
        let state = try TopChromeClient.decodeState(try await client.send(request, sessionID: id))
        learn(state)
        return state
    }

    /// Sends one batch, retrying while the service is unreachable; a retry
    /// also carries the reports that arrived meanwhile. A batch the service
    /// calls stale (its seqs not above one it applied: another life of this
    /// session numbered higher) is numbered above that and sent once more.
    func sendReport(_ batch: ScrollBatch) async {
        var batch = batch
        // A retry keeps its seqs: if the first try did arrive, the service
        // ignores the second as stale instead of applying it twice.
        var isRepeat = false
        var renumbered = false
        var retry = 0
        while ending == nil {
            let outcome: TopChromeClient.Outcome
            do {
                let body = try batch.body()
                outcome = try await client.attempt(client.request("POST", "v1/sessions/\(id)/scroll", body: body), sessionID: id)
            } catch {
                failReport(error)
                return
            }
            switch outcome {
            case let .success(data, _, staleReports):
                let state = try? TopChromeClient.decodeState(data)
                if let state { learn(state) }
                // Only a batch stale as a whole is sent again: one partly
                // applied would be applied twice.
                guard staleReports == batch.count, !isRepeat else { return }
                // Numbered below what the service applied: renumber and send
                // once more (only once: a second stale answer means another
                // client is numbering this session, and its reports win).
                let seq = batch.lastSeq.map(String.init) ?? "?"
                client.log("session \(id): report \(seq) was stale (the service applied \(state?.lastSeq.map(String.init) ?? "?")); sending it above that")
                guard !renumbered else {
                    failReport(TopChromeError.malformedResponse("report \(seq) ignored as stale twice"))
                    return
                }
                renumbered = true
                batch.renumber(nextSeq)
            case let .failure(error):
                if case .sessionGone = error { end(with: error) } else { failReport(error) }
                return
            case let .retryable(error, retryAfter):
                guard retry + 1 < client.configuration.retry.maximumAttempts else {
                    failReport(error)
                    return
                }
                client.log("session \(id): report failed (\(error)); retrying")
                do {
                    try await client.configuration.retry.pause(retry: retry, retryAfter: retryAfter)
                } catch {
                    failReport(error)
                    return
                }
                retry += 1
                isRepeat = true
                if case let .scroll(later) = queue.first?.kind {
                    let newer = queue.removeFirst()
                    doneThrough = max(doneThrough, newer.ticket - 1)
                    batch.append(later)
                }
            }
        }
    }

    func failReport(_ error: any Error) {
        reportFailure = error
        client.log("session \(id): report failed: \(error)")
        if let error = error as? TopChromeError { tellFailure(error) }
    }

    func tellFailure(_ error: TopChromeError) {
        for observe in failureObservers { observe(error) }
    }

    func nextSeq() -> UInt64 {
        lastSeq = min(lastSeq + 1, (1 << 53) - 1)
        return lastSeq
    }
}
