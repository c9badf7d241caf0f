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
    let client: ChromeService

    /// A change or read waiting its turn; `ticket` orders them for `flush`.
    struct Operation {
        var ticket: UInt64
        var kind: Kind
    }

    enum Kind {
        case scroll(ScrollBatch)
        /// `waiter` names the continuation in `waiters`, if anyone waits.
        case command(Command, waiter: UInt64?)
    }

    enum Command {
        case inset(Double)
        case behavior(BehaviorBody)
        case disappear
        case read
        case delete
    }

    var queue: [Operation] = []
    /// Continuations of commands, by waiter key, until answered or cancelled.
    var waiters: [UInt64: CheckedContinuation<SessionState?, any Error>] = [:]
    /// The command being sent, and the task sending it (cancelled with its caller).
    var inFlight: (waiter: UInt64, task: Task<SessionState?, any Error>)?
    var nextKey: UInt64 = 0
    /// The last ticket handed out, and the last one done (sent, failed or dropped).
    var lastTicket: UInt64 = 0
    var doneThrough: UInt64 = 0
    var flushWaiters: [UInt64: (ticket: UInt64, continuation: CheckedContinuation<Void, any Error>)] = [:]
    var isSending = false
    var lastSendStart: ContinuousClock.Instant?
    /// Set by `suspend()`: what is queued goes out without waiting for the interval.
    var hurry = false
    /// Why the session ended: it is gone from the service.
    var ending: TopChromeError?
    /// A report that failed, for the next `flush` to throw.
    var reportFailure: (any Error)?
    /// Who hears of the reports' fate, by the key they stop hearing by.
    var observers: [ObjectIdentifier: @Sendable (SessionNews) -> Void] = [:]
    /// The largest body sent: the configured one until a 413 names the service's.
    var bodyLimit: Int
    /// The batch between two attempts, while the service is out of reach:
    /// its reports are the oldest kept, so the bound drops them first.
    var waitingToRetry: ScrollBatch?
    /// The highest seq this session used or saw the service apply: reports
    /// are numbered above it, from 1 for a new session. Not the clock: a
    /// clock stepped back would make every report stale.
    var lastSeq: UInt64 = 0
    private var streams: [UInt64: AsyncThrowingStream<SessionState, any Error>.Continuation] = [:]
    /// The socket a follower holds open: changes go on it while it is.
    var socketLink: SessionSocketLink?
    /// The upgrade cannot be had here (a proxy refused it, or the platform
    /// has no WebSocket): this session follows and sends over HTTP.
    var socketRefused = false

    init(id: String, client: ChromeService, known state: SessionState?) {
        self.id = id
        self.client = client
        bodyLimit = client.configuration.maximumBodyBytes
        lastSeq = state?.lastSeq ?? 0
    }

    // MARK: Changes

    /// Queues a scroll report and returns its `seq` at once (a state whose
    /// `lastSeq` reaches it includes it). Reports from a horizontal scroll
    /// view never change the state, so they are not sent (nil); vertical
    /// reports that wait for their turn go together in one request. One the
    /// service would refuse is not sent either (nil; told as `.invalidValue`).
    /// `phase` marks a gesture's end for snapping; `contentHeight` and
    /// `viewportHeight` let the service ignore the rubber band at the bottom.
    @discardableResult
    public func report(contentOffsetY: Double, contentInsetTop: Double = 0, axis: ScrollAxis = .vertical,
                       phase: ScrollReport.Phase? = nil, contentHeight: Double? = nil,
                       viewportHeight: Double? = nil) -> UInt64? {
        guard axis == .vertical, ending == nil else { return nil }
        if let reason = Self.refusal(contentOffsetY: contentOffsetY, contentInsetTop: contentInsetTop,
                                     contentHeight: contentHeight, viewportHeight: viewportHeight) {
            failReport(TopChromeError.invalidValue(reason), seqs: [], count: 1)
            return nil
        }
        let seq = nextSeq()
        let batch = ScrollBatch(ScrollReportBody(contentOffsetY: contentOffsetY, contentInsetTop: contentInsetTop, seq: seq,
                                                 phase: phase?.rawValue, contentHeight: contentHeight,
                                                 viewportHeight: viewportHeight))
        lastTicket += 1
        if case var .scroll(waiting) = queue.last?.kind, waiting.canTake(batch, within: bodyLimit) {
            // Taken out first, so the batch grows in place, not copied per report.
            queue.removeLast()
            waiting.append(batch)
            queue.append(Operation(ticket: lastTicket, kind: .scroll(waiting)))
        } else {
            queue.append(Operation(ticket: lastTicket, kind: .scroll(batch)))
        }
        dropReportsBeyondBound()
        sendIfIdle()
        return seq
    }

    /// Why the service would refuse a report, if it would: an offset that is
    /// not finite (a division by zero in the app), a height that is not a
    /// finite 0 or more. Refused on its own here: sent, it would take down
    /// the reports waiting with it in its batch.
    nonisolated static func refusal(contentOffsetY: Double, contentInsetTop: Double,
                                    contentHeight: Double?, viewportHeight: Double?) -> String? {
        if !contentOffsetY.isFinite { return "contentOffsetY \(contentOffsetY) is not finite" }
        if !contentInsetTop.isFinite { return "contentInsetTop \(contentInsetTop) is not finite" }
        for (name, height) in [("contentHeight", contentHeight), ("viewportHeight", viewportHeight)] {
            if let height, !(height.isFinite && height >= 0) { return "\(name) \(height) is not a finite height of 0 or more" }
        }
        return nil
    }

    /// Sets the inset, after everything queued before it.
    @discardableResult
    public func setInset(_ inset: Double) async throws -> SessionState {
        guard inset.isFinite else { throw TopChromeError.invalidValue("inset \(inset) is not finite") }
        return try await perform(.inset(inset))
    }

    /// The screen went away: the island is revealed for the next one.
    @discardableResult
    public func disappear() async throws -> SessionState {
        try await perform(.disappear)
    }

    /// The service's state, read after everything queued before this call.
    public func state() async throws -> SessionState {
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

    /// `observe` hears of every batch of reports delivered or lost, and of
    /// failures nobody waits for (the session's end included).
    func observe(as key: ObjectIdentifier, _ observe: @escaping @Sendable (SessionNews) -> Void) {
        observers[key] = observe
    }

    func stopObserving(_ key: ObjectIdentifier) {
        observers[key] = nil
    }

    /// A state seen anywhere (an answer, the event stream): reports are
    /// numbered above the highest seq it says was applied.
    func learn(_ state: SessionState) {
        if let applied = state.lastSeq, applied > lastSeq { lastSeq = applied }
    }

    func perform(_ command: Command) async throws -> SessionState {
        guard let state = try await run(command) else {
            throw TopChromeError.malformedResponse("no state in the answer")
        }
        return state
    }

    private func run(_ command: Command) async throws -> SessionState? {
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

    // MARK: Ending

    /// The session is gone: queued changes and open event streams end with
    /// `error`. After a delete of its own the streams are left to end with
    /// the service's `deleted` event, normally.
    func end(with error: TopChromeError, streamsFinishing: Bool = true) {
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

    func register(_ continuation: AsyncThrowingStream<SessionState, any Error>.Continuation) -> UInt64? {
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

    var mayOpenSocket: Bool { client.configuration.usesWebSocket && !socketRefused }

    func socketOpened(_ link: SessionSocketLink) {
        socketLink = link
    }

    func socketEnded(_ link: SessionSocketLink) {
        if socketLink === link { socketLink = nil }
    }

    func socketNotOffered() {
        socketRefused = true
    }

    /// The event stream says the session is gone.
    func streamFoundSessionGone() {
        end(with: .sessionGone(id: id))
    }
}

/// What a session tells the `RemoteTopChrome` that follows it, besides states.
enum SessionNews: Sendable {
    /// Reports that will never reach the service, and why: `seqs` are those
    /// numbered (a report refused before numbering has none), `count` all.
    case reportsLost(TopChromeError, seqs: [UInt64], count: Int)
    /// A batch of reports reached the service.
    case reportsDelivered
    /// A change nobody waited for failed (a `disappear`), or the session ended.
    case failed(TopChromeError)
}
