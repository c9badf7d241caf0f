import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import TopChromeCore

/// One session of the service, seen from an app: changes go out in order,
/// one request at a time and at most one per `minimumSendInterval`, and
/// scroll reports that piled up meanwhile go together as one batch
/// (`ScrollBatch` says why all of them).
///
/// Every method that waits stops waiting, and stops its request, when its
/// task is cancelled.
///
/// Use one `ChromeSession` per screen: two of them for the same id keep
/// separate queues.
public actor ChromeSession {
    public nonisolated let id: String
    let client: TopChromeClient

    /// A change or read waiting its turn; `ticket` orders them for `flush`.
    private struct Operation {
        var ticket: UInt64
        var kind: Kind
    }

    private enum Kind {
        case scroll(ScrollBatch)
        /// `waiter` names the continuation in `waiters`, if anyone waits.
        case command(Command, waiter: UInt64?)
    }

    enum Command {
        case inset(Double)
        case disappear
        case read
        case delete
    }

    private var queue: [Operation] = []
    /// Continuations of commands, by waiter key, until answered or cancelled.
    private var waiters: [UInt64: CheckedContinuation<ChromeState?, any Error>] = [:]
    /// The command being sent, and the task sending it (cancelled with its caller).
    private var inFlight: (waiter: UInt64, task: Task<ChromeState?, any Error>)?
    private var nextKey: UInt64 = 0
    /// The last ticket handed out, and the last one done (sent, failed or dropped).
    private var lastTicket: UInt64 = 0
    private var doneThrough: UInt64 = 0
    private var flushWaiters: [UInt64: (ticket: UInt64, continuation: CheckedContinuation<Void, any Error>)] = [:]
    private var isSending = false
    private var lastSendStart: ContinuousClock.Instant?
    /// Set by `suspend()`: what is queued goes out without waiting for the interval.
    private var hurry = false
    /// Why the session ended: it is gone from the service.
    private var ending: TopChromeError?
    /// A report that failed, for the next `flush` to throw.
    private var reportFailure: (any Error)?
    private var failureObservers: [@Sendable (TopChromeError) -> Void] = []
    /// The highest seq this session used or saw the service apply: reports
    /// are numbered above it, from 1 for a new session. Not the clock: a
    /// clock stepped back would make every report stale.
    private var lastSeq: UInt64 = 0
    private var streams: [UInt64: AsyncThrowingStream<ChromeState, any Error>.Continuation] = [:]

    init(id: String, client: TopChromeClient, known state: ChromeState?) {
        self.id = id
        self.client = client
        lastSeq = state?.lastSeq ?? 0
    }

    // MARK: Changes

    /// Queues a scroll report and returns its `seq` at once (a state whose
    /// `lastSeq` reaches it includes it). Reports from a horizontal scroll
    /// view never change the state, so they are not sent (nil); vertical
    /// reports that wait for their turn go together in one request.
    /// `phase` marks a gesture's end for snapping; `contentHeight` and
    /// `viewportHeight` let the service ignore the rubber band at the bottom.
    @discardableResult
    public func report(contentOffsetY: Double, contentInsetTop: Double = 0, axis: ScrollAxis = .vertical,
                       phase: ScrollReport.Phase? = nil, contentHeight: Double? = nil,
                       viewportHeight: Double? = nil) -> UInt64? {
        guard axis == .vertical, ending == nil else { return nil }
        let seq = nextSeq()
        let batch = ScrollBatch(ScrollReportBody(contentOffsetY: contentOffsetY, contentInsetTop: contentInsetTop, seq: seq,
                                                 phase: phase?.rawValue, contentHeight: contentHeight,
                                                 viewportHeight: viewportHeight))
        lastTicket += 1
        if case var .scroll(waiting) = queue.last?.kind {
            waiting.append(batch)
            queue[queue.count - 1] = Operation(ticket: lastTicket, kind: .scroll(waiting))
        } else {
            queue.append(Operation(ticket: lastTicket, kind: .scroll(batch)))
        }
        sendIfIdle()
        return seq
    }

    /// Sets the inset, after everything queued before it.
    @discardableResult
    public func setInset(_ inset: Double) async throws -> ChromeState {
        guard inset.isFinite else { throw TopChromeError.invalidValue("inset \(inset) is not finite") }
        return try await perform(.inset(inset))
    }

    /// The screen went away: the island is revealed for the next one.
    @discardableResult
    public func disappear() async throws -> ChromeState {
        try await perform(.disappear)
    }

    /// The service's state, read after everything queued before this call.
    public func state() async throws -> ChromeState {
        try await perform(.read)
    }

    /// Deletes the session, after everything queued before it. A session
    /// already gone counts as deleted.
    public func delete() async throws {
        _ = try await run(.delete)
    }

    /// Returns when everything queued before this call has been sent (or
    /// has failed); reports queued later are not waited for. Throws the
    /// error of a report that failed since the last flush, or
    /// `CancellationError` when its task is cancelled.
    public func flush() async throws {
        if let ending { throw ending }
        let ticket = lastTicket
        if doneThrough < ticket {
            nextKey += 1
            let key = nextKey
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                    if Task.isCancelled {
                        continuation.resume(throwing: CancellationError())
                    } else {
                        flushWaiters[key] = (ticket, continuation)
                    }
                }
            } onCancel: {
                Task { await self.cancelFlush(key) }
            }
        }
        if let ending { throw ending }
        if let failure = reportFailure {
            reportFailure = nil
            throw failure
        }
    }

    /// For an app going to the background: sends what is queued at once,
    /// without the pause between requests, and returns when it is sent.
    /// Errors are not thrown here (they surface at the next `flush`).
    public func suspend() async {
        hurry = true
        defer { hurry = false }
        do {
            try await flush()
        } catch {
            if !(error is CancellationError) { reportFailure = error }
        }
    }

    /// Queues a command without waiting for it, for callers that must not
    /// wait (a view's `onDisappear`).
    func enqueue(_ command: Command) {
        guard ending == nil else { return }
        lastTicket += 1
        queue.append(Operation(ticket: lastTicket, kind: .command(command, waiter: nil)))
        sendIfIdle()
    }

    /// `observe` hears of every report that fails (and of the session's end).
    func observeFailures(_ observe: @escaping @Sendable (TopChromeError) -> Void) {
        failureObservers.append(observe)
    }

    /// A state seen anywhere (an answer, the event stream): reports are
    /// numbered above the highest seq it says was applied.
    func learn(_ state: ChromeState) {
        if let applied = state.lastSeq, applied > lastSeq { lastSeq = applied }
    }

    private func perform(_ command: Command) async throws -> ChromeState {
        guard let state = try await run(command) else {
            throw TopChromeError.malformedResponse("no state in the answer")
        }
        return state
    }

    private func run(_ command: Command) async throws -> ChromeState? {
        if let ending {
            if case .delete = command, case .sessionGone = ending { return nil }
            throw ending
        }
        try Task.checkCancellation()
        nextKey += 1
        let key = nextKey
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                waiters[key] = continuation
                lastTicket += 1
                queue.append(Operation(ticket: lastTicket, kind: .command(command, waiter: key)))
                sendIfIdle()
            }
        } onCancel: {
            Task { await self.cancelCommand(key) }
        }
    }

    /// A caller of a command was cancelled: a command still queued is taken
    /// out, one in flight has its request cancelled.
    private func cancelCommand(_ key: UInt64) {
        if let index = queue.firstIndex(where: { if case .command(_, key) = $0.kind { true } else { false } }) {
            queue.remove(at: index)
            waiters.removeValue(forKey: key)?.resume(throwing: CancellationError())
            finishFlushes()
        } else if let inFlight, inFlight.waiter == key {
            inFlight.task.cancel()
        }
    }

    private func cancelFlush(_ key: UInt64) {
        flushWaiters.removeValue(forKey: key)?.continuation.resume(throwing: CancellationError())
    }

    // MARK: Sending

    private func sendIfIdle() {
        guard !isSending else { return }
        isSending = true
        Task { await sendQueued() }
    }

    /// Sends the queue in order, one request at a time and not sooner than
    /// the interval after the last, until it is empty.
    private func sendQueued() async {
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
    private func pace() async {
        guard !hurry, let lastSendStart else { return }
        let interval = Duration.nanoseconds(Int64(max(0, client.configuration.minimumSendInterval) * 1e9))
        let due = lastSendStart + interval
        if ContinuousClock.now < due {
            try? await Task.sleep(until: due, clock: .continuous)
        }
    }

    private func finishFlushes() {
        let ready = flushWaiters.filter { $0.value.ticket <= doneThrough || ending != nil }
        for (key, waiter) in ready {
            flushWaiters[key] = nil
            waiter.continuation.resume()
        }
    }

    private func sendCommand(_ command: Command, waiter: UInt64?) async {
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

    private func send(_ command: Command) async throws -> ChromeState? {
        let path = "v1/sessions/\(id)"
        let request: URLRequest
        switch command {
        case let .inset(inset):
            request = try await client.request("PUT", path + "/inset", body: TopChromeClient.encode(InsetBody(inset: inset)))
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
    private func sendReport(_ batch: ScrollBatch) async {
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

    private func failReport(_ error: any Error) {
        reportFailure = error
        client.log("session \(id): report failed: \(error)")
        if let error = error as? TopChromeError { tellFailure(error) }
    }

    private func tellFailure(_ error: TopChromeError) {
        for observe in failureObservers { observe(error) }
    }

    private func nextSeq() -> UInt64 {
        lastSeq = min(lastSeq + 1, (1 << 53) - 1)
        return lastSeq
    }

    // MARK: Ending

    /// The session is gone: queued changes and open event streams end with
    /// `error`. After a delete of its own the streams are left to end with
    /// the service's `deleted` event, normally.
    private func end(with error: TopChromeError, streamsFinishing: Bool = true) {
        guard ending == nil else { return }
        ending = error
        let dropped = queue
        queue = []
        for case let .command(_, key?) in dropped.map(\.kind) { waiters.removeValue(forKey: key)?.resume(throwing: error) }
        finishFlushes()
        tellFailure(error)
        guard streamsFinishing else { return }
        let open = streams
        streams = [:]
        for continuation in open.values { continuation.finish(throwing: error) }
    }

    func register(_ continuation: AsyncThrowingStream<ChromeState, any Error>.Continuation) -> UInt64? {
        if let ending {
            continuation.finish(throwing: ending)
            return nil
        }
        nextKey += 1
        streams[nextKey] = continuation
        return nextKey
    }

    func unregister(_ key: UInt64) {
        streams[key] = nil
    }

    /// The event stream says the session is gone.
    func streamFoundSessionGone() {
        end(with: .sessionGone(id: id))
    }
}
