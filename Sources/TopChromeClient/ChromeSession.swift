import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One session of the service, seen from an app: changes go out in order,
/// one request at a time, and scroll reports that piled up meanwhile are
/// reduced to the one that matters.
///
/// Use one `ChromeSession` per screen: two of them for the same id keep
/// separate queues.
public actor ChromeSession {
    public nonisolated let id: String
    let client: TopChromeClient

    /// A change or read waiting its turn.
    private enum Operation {
        case scroll(contentOffsetY: Double, contentInsetTop: Double)
        case command(Command, CheckedContinuation<ChromeState?, any Error>?)
    }

    enum Command {
        case inset(Double)
        case disappear
        case read
        case delete
    }

    private var queue: [Operation] = []
    private var isSending = false
    /// Why the session ended: it is gone from the service.
    private var ending: TopChromeError?
    /// A report that failed, for the next `flush` to throw.
    private var reportFailure: (any Error)?
    private var flushWaiters: [CheckedContinuation<Void, any Error>] = []
    private var lastSeq: UInt64 = 0
    private var streams: [UInt64: AsyncThrowingStream<ChromeState, any Error>.Continuation] = [:]
    private var nextStreamKey: UInt64 = 0

    init(id: String, client: TopChromeClient) {
        self.id = id
        self.client = client
    }

    // MARK: Changes

    /// Queues a scroll report and returns at once. Reports from a horizontal
    /// scroll view never change the state, so they are not sent; of the
    /// vertical reports that wait while a request is in flight, only the
    /// newest is sent.
    public func report(contentOffsetY: Double, contentInsetTop: Double = 0, axis: ScrollAxis = .vertical) {
        guard axis == .vertical, ending == nil else { return }
        let report = Operation.scroll(contentOffsetY: contentOffsetY, contentInsetTop: contentInsetTop)
        if case .scroll = queue.last {
            queue[queue.count - 1] = report
        } else {
            queue.append(report)
        }
        sendIfIdle()
    }

    /// Sets the inset, after everything queued before it.
    @discardableResult
    public func setInset(_ inset: Double) async throws -> ChromeState {
        try await perform(.inset(inset))
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

    /// Returns when every report queued so far has been acknowledged by the
    /// service; throws the error of a report that failed since the last flush.
    public func flush() async throws {
        if let ending { throw ending }
        if isSending {
            try await withCheckedThrowingContinuation { flushWaiters.append($0) }
        } else if let failure = reportFailure {
            reportFailure = nil
            throw failure
        }
    }

    /// Queues a command without waiting for it, for callers that must not
    /// wait (a view's `onDisappear`).
    func enqueue(_ command: Command) {
        guard ending == nil else { return }
        queue.append(.command(command, nil))
        sendIfIdle()
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
        return try await withCheckedThrowingContinuation { continuation in
            queue.append(.command(command, continuation))
            sendIfIdle()
        }
    }

    // MARK: Sending

    private func sendIfIdle() {
        guard !isSending else { return }
        isSending = true
        Task { await sendQueued() }
    }

    /// Sends the queue in order, one request at a time, until it is empty.
    private func sendQueued() async {
        while !queue.isEmpty {
            switch queue.removeFirst() {
            case let .scroll(offset, inset):
                await sendReport(contentOffsetY: offset, contentInsetTop: inset)
            case let .command(command, continuation):
                do {
                    let state = try await send(command)
                    continuation?.resume(returning: state)
                } catch {
                    if case let .some(.sessionGone(id)) = error as? TopChromeError, case .delete = command {
                        end(with: .sessionGone(id: id), streamsFinishing: false)
                        continuation?.resume(returning: nil)
                        continue
                    }
                    if let error = error as? TopChromeError, case .sessionGone = error { end(with: error) }
                    continuation?.resume(throwing: error)
                }
            }
        }
        isSending = false
        let waiters = flushWaiters
        flushWaiters = []
        let failure = ending ?? reportFailure
        if !waiters.isEmpty { reportFailure = nil }
        for waiter in waiters {
            if let failure { waiter.resume(throwing: failure) } else { waiter.resume() }
        }
    }

    private func send(_ command: Command) async throws -> ChromeState? {
        let path = "v1/sessions/\(id)"
        let request: URLRequest
        switch command {
        case let .inset(inset):
            request = client.request("PUT", path + "/inset", body: try JSONEncoder().encode(["inset": inset]))
        case .disappear:
            request = client.request("POST", path + "/disappear")
        case .read:
            request = client.request("GET", path)
        case .delete:
            _ = try await client.send(client.request("DELETE", path), sessionID: id)
            end(with: .sessionGone(id: id), streamsFinishing: false)
            return nil
        }
        return try TopChromeClient.decodeState(try await client.send(request, sessionID: id))
    }

    /// Sends one report, retrying while the service is unreachable; a retry
    /// carries the newest report that arrived meanwhile instead.
    private func sendReport(contentOffsetY: Double, contentInsetTop: Double) async {
        var report = (offset: contentOffsetY, inset: contentInsetTop)
        // A retry keeps its seq: if the first try did arrive, the service
        // ignores the second as stale instead of applying it twice.
        var seq = nextSeq()
        var retry = 0
        while ending == nil {
            let body = Data(#"{"contentOffsetY":\#(report.offset),"contentInsetTop":\#(report.inset),"seq":\#(seq)}"#.utf8)
            let outcome: TopChromeClient.Outcome
            do {
                outcome = try await client.attempt(client.request("POST", "v1/sessions/\(id)/scroll", body: body), sessionID: id)
            } catch {
                reportFailure = error
                return
            }
            switch outcome {
            case .success:
                return
            case let .failure(error):
                if case .sessionGone = error { end(with: error) } else { reportFailure = error }
                return
            case let .retryable(error, retryAfter):
                guard retry + 1 < client.configuration.retry.maximumAttempts else {
                    reportFailure = error
                    return
                }
                do {
                    try await client.configuration.retry.pause(retry: retry, retryAfter: retryAfter)
                } catch {
                    reportFailure = error
                    return
                }
                retry += 1
                if case let .scroll(offset, inset) = queue.first {
                    queue.removeFirst()
                    report = (offset, inset)
                    seq = nextSeq()
                }
            }
        }
    }

    /// Numbers grow with the clock, not from 1, so that reports of a
    /// session attached again (a relaunched app) are not taken as stale
    /// against the numbers its earlier life used. Microseconds since 1970
    /// stay below the API's limit of 2^53 - 1 until the 2200s.
    private func nextSeq() -> UInt64 {
        let now = UInt64(max(0, Date().timeIntervalSince1970 * 1_000_000))
        lastSeq = min(max(lastSeq + 1, now), (1 << 53) - 1)
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
        for case let .command(_, continuation?) in dropped { continuation.resume(throwing: error) }
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
        nextStreamKey += 1
        streams[nextStreamKey] = continuation
        return nextStreamKey
    }

    func unregister(_ key: UInt64) {
        streams[key] = nil
    }

    /// The event stream says the session is gone.
    func streamFoundSessionGone() {
        end(with: .sessionGone(id: id))
    }
}
