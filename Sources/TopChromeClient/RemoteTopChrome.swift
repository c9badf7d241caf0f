import Observation

/// The top chrome of one screen, kept by the service: put it next to the
/// outer vertical scroll view, report its geometry, read `inset` and
/// `isRevealed` anywhere, and `connection` and `lastError` to show when the
/// mirror is not live. Properties change on the main actor, and only when
/// their value does, so a view reading `isRevealed` redraws on flips only.
///
/// SwiftUI: `.task { await chrome.follow() }`. UIKit: `start()` in
/// `viewWillAppear`, `stop()` in `viewDidDisappear`, and `report(…)` from
/// `scrollViewDidScroll` (synchronous, no `Task` per callback).
@MainActor @Observable public final class RemoteTopChrome {
    /// How tall status bar and island are together.
    public private(set) var inset: Double
    /// Whether the island shows.
    public private(set) var isRevealed: Bool
    /// Whether `inset` and `isRevealed` are live, being retried, or stopped.
    public private(set) var connection: ConnectionState = .stopped
    /// Why the mirror is not live, or why a report failed: `.sessionGone`
    /// (deleted, or expired after the service's idle TTL), `.rejected`
    /// (a 401 with a wrong token, say), `.unavailable` (503, 429), or
    /// `.transport` (offline). Cleared when the stream is live again.
    public private(set) var lastError: TopChromeError?
    /// The session followed; replaced by the one `onSessionGone` gives.
    public private(set) var session: ChromeSession

    /// Asked when the session is gone (deleted, or expired after its idle
    /// TTL): return a fresh session (created or attached) to follow instead,
    /// or `nil` to stay `.stopped` with `lastError` saying why.
    @ObservationIgnored public var onSessionGone: (@MainActor () async -> ChromeSession?)?

    @ObservationIgnored private var following: Task<Void, Never>?
    /// Reports and disappearances in the order the view made them, reduced
    /// (a run of reports to the newest); one task hands them to the session.
    @ObservationIgnored private let outbox: Outbox
    /// Where the sessions' failures wait for this object (see `FailureRelay`).
    @ObservationIgnored private let failures = FailureRelay()

    /// Until the first state arrives: no inset, island shown, as at the top.
    public init(session: ChromeSession) {
        self.session = session
        inset = 0
        isRevealed = true
        outbox = Outbox(session: session)
        observeFailures(of: session)
    }

    deinit {
        outbox.close()
    }

    /// Follows the session's states until the calling task is cancelled,
    /// for SwiftUI's `.task { await chrome.follow() }`; also returns when
    /// following ends for good (`connection == .stopped`: the session is
    /// gone and `onSessionGone` gave none, or the service refused).
    public func follow() async {
        // The relay holds this object only while it follows (which holds it
        // anyway), so the session never keeps it alive afterwards.
        failures.target = self
        if let missed = failures.takeMissed() { lastError = missed }
        defer {
            connection = .stopped
            failures.target = nil
        }
        while !Task.isCancelled {
            connection = .connecting
            let session = self.session
            var gone = false
            let updates = AsyncStream.makeStream(of: Update.self, bufferingPolicy: .bufferingNewest(64))
            let states = session.states(onConnection: { updates.continuation.yield(.connection($0)) },
                                        onWait: { updates.continuation.yield(.waiting($0)) })
            let reader = Task {
                do {
                    for try await state in states { updates.continuation.yield(.state(state)) }
                    updates.continuation.yield(.ended(nil))
                } catch {
                    updates.continuation.yield(.ended(error))
                }
                updates.continuation.finish()
            }
            await withTaskCancellationHandler {
                for await update in updates.stream {
                    switch update {
                    case let .state(state): apply(state)
                    case .connection(.connected):
                        connection = .live
                        lastError = nil
                    case let .connection(.interrupted(error, _)):
                        lastError = error
                    case let .waiting(seconds):
                        if connection != .stopped { connection = .retrying(after: seconds) }
                    case .ended(nil):
                        // `event: deleted`: deleted or expired.
                        gone = true
                    case let .ended(error?):
                        if case .sessionGone = error as? TopChromeError {
                            gone = true
                        } else if let error = error as? TopChromeError {
                            lastError = error
                        }
                    }
                }
            } onCancel: {
                reader.cancel()
            }
            reader.cancel()
            guard gone, !Task.isCancelled else { return }
            lastError = .sessionGone(id: session.id)
            connection = .stopped
            guard let onSessionGone, let fresh = await onSessionGone() else { return }
            switchTo(fresh)
        }
    }

    private enum Update: Sendable {
        case state(ChromeState)
        case connection(StreamConnectionEvent)
        case waiting(Double)
        case ended((any Error)?)
    }

    /// Starts `follow()` in a task of its own, for UIKit; `stop()` ends it.
    /// The task holds this object until then.
    public func start() {
        guard following == nil else { return }
        following = Task { await follow() }
    }

    /// Ends the event stream and its connection.
    public func stop() {
        following?.cancel()
        following = nil
    }

    /// The outer vertical scroll view's geometry; queued, returns at once.
    /// Call it from every `scrollViewDidScroll`: what waits is reduced to
    /// the newest, and requests go out at most one per `minimumSendInterval`.
    public func report(contentOffsetY: Double, contentInsetTop: Double) {
        outbox.add(.report(contentOffsetY: contentOffsetY, contentInsetTop: contentInsetTop))
    }

    /// The screen went away: the island shows at once, for the next screen,
    /// and the service is told.
    public func disappear() {
        if !isRevealed { isRevealed = true }
        outbox.add(.disappear)
    }

    /// The app goes to the background: sends what is queued now and returns
    /// when it is sent (call it inside a background task). A failure is
    /// kept in `lastError`.
    public func suspend() async {
        await outbox.drain()
        await session.suspend()
    }

    private func switchTo(_ fresh: ChromeSession) {
        session = fresh
        outbox.session = fresh
        lastError = nil
        observeFailures(of: fresh)
    }

    /// Failed reports and commands queued without a caller (`disappear`)
    /// show in `lastError`. Through the relay, not a weak reference: the
    /// session outlives this object, and LeakSanitizer mistakes a weak
    /// reference's side table for a leak.
    private func observeFailures(of session: ChromeSession) {
        // The session keeps this closure: it must not hold the session
        // (a cycle neither would leave), so it names it by identity.
        let relay = failures, named = ObjectIdentifier(session)
        let tell: @Sendable (TopChromeError) -> Void = { error in
            Task { @MainActor in relay.tell(error, about: named) }
        }
        Task { await session.observeFailures(tell) }
    }

    /// A failure the relay hands on while this object follows.
    fileprivate func failed(_ error: TopChromeError, in session: ObjectIdentifier) {
        guard ObjectIdentifier(self.session) == session else { return }
        lastError = error
    }

    private func apply(_ state: ChromeState) {
        if inset != state.inset { inset = state.inset }
        if isRevealed != state.isRevealed { isRevealed = state.isRevealed }
    }
}

/// What a `RemoteTopChrome` has to tell its session, bounded: consecutive
/// reports are reduced to the newest, consecutive disappearances to one.
@MainActor private final class Outbox {
    enum Change {
        case report(contentOffsetY: Double, contentInsetTop: Double)
        case disappear
    }

    var session: ChromeSession
    private var pending: [Change] = []
    /// Wakes the task that drains `pending`; one wake-up is as good as many.
    private nonisolated let wake: AsyncStream<Void>.Continuation
    private var draining = false

    init(session: ChromeSession) {
        self.session = session
        let (wakes, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        self.wake = wake
        Task { [self] in
            for await _ in wakes { await drain() }
        }
    }

    func add(_ change: Change) {
        switch (pending.last, change) {
        case (.report?, .report), (.disappear?, .disappear):
            pending[pending.count - 1] = change
        default:
            pending.append(change)
        }
        wake.yield()
    }

    /// Hands what is pending to the session, in order.
    func drain() async {
        // One drain at a time, or two could hand changes over out of order.
        while draining { try? await Task.sleep(nanoseconds: 1_000_000) }
        draining = true
        defer { draining = false }
        while !pending.isEmpty {
            let change = pending.removeFirst()
            switch change {
            case let .report(offset, inset):
                await session.report(contentOffsetY: offset, contentInsetTop: inset)
            case .disappear:
                await session.enqueue(.disappear)
            }
        }
    }

    nonisolated func close() {
        wake.finish()
    }
}

/// Hands a session's failures to its `RemoteTopChrome` while that follows,
/// and keeps the newest for the next `follow()` otherwise. It holds the
/// object only while it follows: a session, which the object holds, must
/// not hold the object the rest of the time, or neither would ever be freed.
@MainActor private final class FailureRelay {
    var target: RemoteTopChrome?
    private var missed: (TopChromeError, ObjectIdentifier)?

    func tell(_ error: TopChromeError, about session: ObjectIdentifier) {
        if let target {
            target.failed(error, in: session)
        } else {
            missed = (error, session)
        }
    }

    /// The newest failure told while nobody followed.
    func takeMissed() -> TopChromeError? {
        defer { missed = nil }
        guard let (error, session) = missed, let target, ObjectIdentifier(target.session) == session else { return nil }
        return error
    }
}
