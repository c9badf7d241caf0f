import Foundation
import Observation
import TopChromeCore

/// The top chrome of one screen, kept by the service: put it next to the
/// outer vertical scroll view, report its geometry, read `inset`,
/// `isRevealed` and `collapsedFraction` anywhere, `connection` and
/// `lastError` to show when the mirror is not live, and `lastReportError`
/// and `reportsLost` to show reports that never reached the service. Properties change on
/// the main actor, and only when their value does, so a view reading
/// `isRevealed` redraws on flips only.
///
/// A report moves the chrome at once, in the same frame: the session's
/// behaviour is applied here by the service's own rules, and the service's
/// states reconcile it as they come (`ChromePrediction` says how; the
/// service wins).
///
/// SwiftUI: `.task { await chrome.follow() }`. UIKit: `start()` in
/// `viewWillAppear`, `stop()` in `viewDidDisappear`, and `report(…)` from
/// `scrollViewDidScroll` (synchronous, no `Task` per callback).
@MainActor @Observable public final class RemoteTopChrome {
    /// How tall status bar and island are together.
    public private(set) var inset: Double
    /// Whether the island shows.
    public private(set) var isRevealed: Bool
    /// 0 shown … 1 hidden, in hundredths: what an animated bar follows.
    public private(set) var collapsedFraction: Double = 0
    /// How far the chrome is moved up, from minus its collapsible height (hidden) to 0 (shown).
    public private(set) var heightOffset: Double = 0
    /// How the chrome follows scrolling, as the service's latest state says.
    public private(set) var behavior: RevealBehavior = .revealAtTop
    /// Whether `inset` and `isRevealed` are live, being retried, or stopped.
    public internal(set) var connection: ConnectionState = .stopped
    /// Why the mirror is not live (or a `disappear` failed): `.sessionGone`
    /// (deleted, or expired after the service's idle TTL), `.rejected`
    /// (a 401 with a wrong token, say), `.unavailable` (503, 429), or
    /// `.transport` (offline). Cleared when the stream is live again.
    public internal(set) var lastError: TopChromeError?
    /// Why the last reports that failed for good never reached the service
    /// (refused, out of reach past `reportRetention`, dropped past
    /// `maximumQueuedReports`); kept apart from `lastError`, which a
    /// reconnection clears, and cleared only when a report arrives.
    public var lastReportError: TopChromeError? { news.lastReportError }
    /// How many reports never reached the service, since this object was made.
    public var reportsLost: Int { news.reportsLost }
    /// The session followed; replaced by the one `onSessionGone` gives.
    public private(set) var session: ChromeSession

    /// Asked when the session is gone (deleted, or expired after its idle
    /// TTL): return a fresh session (created or attached) to follow instead,
    /// or `nil` to stay `.stopped` with `lastError` saying why.
    @ObservationIgnored public var onSessionGone: (@MainActor () async -> ChromeSession?)?

    @ObservationIgnored private var following: Task<Void, Never>?
    /// The task reading the stream now, which `reconnect()` ends.
    @ObservationIgnored private var reading: Task<Void, Never>?
    /// Set by `reconnect()`: the stream that ends opens again at once.
    @ObservationIgnored private var reconnecting = false
    /// Reports and disappearances in the order the view made them, and the
    /// prediction; one task hands them to the session.
    @ObservationIgnored private let outbox: ReportOutbox
    /// Where the sessions' news wait for this object (see `SessionNewsRelay`).
    @ObservationIgnored let news: SessionNewsRelay
    /// The session the relay hears, for `deinit`, which runs off the main actor.
    @ObservationIgnored private nonisolated let observed: ObservedSession
    /// The service played in memory, for one made by `local(_:)`; nil: the real one.
    @ObservationIgnored var local: LocalChrome?
    /// What a local `follow()` waits on; ended by a local delete.
    @ObservationIgnored var localFollowing: Task<Void, Never>?

    /// Until the first state arrives: no inset, island shown, as at the top.
    public init(session: ChromeSession) {
        self.session = session
        inset = 0
        isRevealed = true
        outbox = ReportOutbox(session: session)
        news = SessionNewsRelay(following: session)
        observed = ObservedSession(session)
        observe(session)
    }

    /// The session may live on (another screen follows it): it stops
    /// telling this object's relay, or each object made would stay in it.
    deinit {
        outbox.close()
        let session = observed.session, key = ObjectIdentifier(news)
        Task { await session.stopObserving(key) }
    }

    /// Follows the session's states until the calling task is cancelled,
    /// for SwiftUI's `.task { await chrome.follow() }`; also returns when
    /// following ends for good (`connection == .stopped`: the session is
    /// gone and `onSessionGone` gave none, or the service refused).
    public func follow() async {
        if local != nil { return await followLocally() }
        // The relay holds this object only while it follows (which holds it
        // anyway), so the session never keeps it alive afterwards.
        news.target = self
        let (missed, lost) = news.takeMissed()
        if let missed { lastError = missed }
        forget(lost)
        defer {
            connection = .stopped
            news.target = nil
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
                    // A cancelled read ends as a deleted session's does: only the latter is gone.
                    if !Task.isCancelled { updates.continuation.yield(.ended(nil)) }
                } catch {
                    updates.continuation.yield(.ended(error))
                }
                updates.continuation.finish()
            }
            reading = reader
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
            reading = nil
            if reconnecting, !gone, !Task.isCancelled {
                reconnecting = false
                continue
            }
            guard gone, !Task.isCancelled else { return }
            lastError = .sessionGone(id: session.id)
            connection = .stopped
            guard let onSessionGone, let fresh = await onSessionGone() else { return }
            switchTo(fresh)
        }
    }

    private enum Update: Sendable {
        case state(SessionState)
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

    /// Opens the event stream again now, with the backoff from its start:
    /// for when the app knows the network is back (the device came online,
    /// the app came to the foreground) and should not wait out a backoff
    /// grown through an outage. Nothing happens while not following.
    public func reconnect() {
        guard let reading else { return }
        reconnecting = true
        reading.cancel()
    }

    /// The outer vertical scroll view's geometry; applied at once (once the
    /// first state told the behaviour) and queued, returns at once. Call it
    /// from every `scrollViewDidScroll`, with `phase: .ended` when the finger
    /// lifts (for `snap`) and both heights where the bottom rubber-bands:
    /// requests go out at most one per `minimumSendInterval`.
    public func report(contentOffsetY: Double, contentInsetTop: Double, phase: ScrollReport.Phase? = nil,
                       contentHeight: Double? = nil, viewportHeight: Double? = nil) {
        if local != nil {
            return moveLocally(.scroll(ScrollReport(contentOffsetY: contentOffsetY, contentInsetTop: contentInsetTop, phase: phase,
                                                      contentHeight: contentHeight, viewportHeight: viewportHeight)))
        }
        // One the service would refuse moves nothing here either.
        if let reason = ChromeSession.refusal(contentOffsetY: contentOffsetY, contentInsetTop: contentInsetTop,
                                              contentHeight: contentHeight, viewportHeight: viewportHeight) {
            news.refused(.invalidValue(reason))
            return
        }
        let report = ScrollReport(contentOffsetY: contentOffsetY, contentInsetTop: contentInsetTop, phase: phase,
                                  contentHeight: contentHeight, viewportHeight: viewportHeight)
        let ticket = outbox.prediction.predict(report)
        showPrediction()
        outbox.add(.report(report, ticket: ticket))
    }

    /// The screen went away: the island shows at once, for the next screen,
    /// and the service is told.
    public func disappear() {
        if local != nil { return moveLocally(.disappear) }
        outbox.prediction.disappear()
        showPrediction()
        if !isRevealed { isRevealed = true }
        outbox.add(.disappear)
    }

    /// Chooses how the chrome follows scrolling from now on (see
    /// `ChromeSession.setBehavior`), after the reports made before it. The
    /// prediction takes the new behaviour with the service's state that
    /// names it, as it takes every change the service makes.
    @discardableResult
    public func setBehavior(_ behavior: RevealBehavior, collapsibleHeight: Double? = nil,
                            snap: Bool = false) async throws -> SessionState {
        if local != nil {
            return try changeLocally(.setBehavior(RevealSettings(behavior: behavior, collapsibleHeight: collapsibleHeight.map(Float.init),
                                                                 snap: snap)))
        }
        await outbox.drain()
        return try await session.setBehavior(behavior, collapsibleHeight: collapsibleHeight, snap: snap)
    }

    /// Sets the inset, after every report and change made before it.
    @discardableResult
    public func setInset(_ inset: Double) async throws -> SessionState {
        if local != nil { return try changeLocally(.setInset(inset)) }
        await outbox.drain()
        return try await session.setInset(inset)
    }

    /// The service's state, read after every report and change made before this call.
    public func state() async throws -> SessionState {
        if let local { return try local.answer() }
        await outbox.drain()
        return try await session.state()
    }

    /// Deletes the session, after every report and change made before it.
    public func delete() async throws {
        if local != nil { return try deleteLocally() }
        await outbox.drain()
        try await session.delete()
    }

    /// Returns when every report and change made before this call has been
    /// sent or has failed; throws a report's failure since the last flush.
    public func flush() async throws {
        if local != nil { return }
        await outbox.drain()
        try await session.flush()
    }

    /// The app goes to the background: sends what is queued now and returns
    /// when it is sent (call it inside a background task). A failure is
    /// kept in `lastReportError`.
    public func suspend() async {
        if local != nil { return }
        await outbox.drain()
        await session.suspend()
    }

    private func switchTo(_ fresh: ChromeSession) {
        let key = ObjectIdentifier(news), left = session
        Task { await left.stopObserving(key) }
        session = fresh
        observed.session = fresh
        outbox.session = fresh
        outbox.prediction.reset()
        lastError = nil
        news.follow(fresh)
        observe(fresh)
    }

    /// Reports lost or delivered, and commands queued without a caller
    /// (`disappear`) that failed. Through the relay, not a weak reference:
    /// the session outlives this object, and LeakSanitizer mistakes a weak
    /// reference's side table for a leak.
    private func observe(_ session: ChromeSession) {
        // The session keeps this closure: it must not hold the session
        // (a cycle neither would leave), so it names it by identity.
        let relay = news, named = ObjectIdentifier(session), key = ObjectIdentifier(news)
        let tell: @Sendable (SessionNews) -> Void = { news in
            Task { @MainActor in relay.tell(news, about: named) }
        }
        Task { await session.observe(as: key, tell) }
    }

    /// A failure the relay hands on while this object follows.
    func failed(_ error: TopChromeError) {
        lastError = error
    }

    /// Reports that never reach the service leave the prediction.
    func forget(_ seqs: Set<UInt64>) {
        guard !seqs.isEmpty else { return }
        outbox.prediction.forget(seqs)
        showPrediction()
    }

    func apply(_ state: SessionState) {
        outbox.prediction.reconcile(with: state)
        showPrediction()
    }

    private func showPrediction() {
        guard let state = outbox.prediction.predicted else { return }
        if inset != state.inset { inset = state.inset }
        if behavior != state.behavior { behavior = state.behavior }
        if isRevealed != state.isRevealed { isRevealed = state.isRevealed }
        if collapsedFraction != state.collapsedFraction { collapsedFraction = state.collapsedFraction }
        let offset = Double(state.heightOffset)
        if heightOffset != offset { heightOffset = offset }
    }
}

/// A session readable from any thread: what `RemoteTopChrome.deinit` needs
/// to stop its observation.
private final class ObservedSession: @unchecked Sendable {
    private let lock = NSLock()
    private var current: ChromeSession

    init(_ session: ChromeSession) {
        current = session
    }

    var session: ChromeSession {
        get { lock.withLock { current } }
        set { lock.withLock { current = newValue } }
    }
}
