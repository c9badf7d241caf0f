import Observation

/// The top chrome of one screen, kept by the service: put it next to the
/// outer vertical scroll view, report its geometry, read `inset` and
/// `isRevealed` anywhere. Properties change on the main actor, and only
/// when their value does, so a view reading `isRevealed` redraws on flips only.
@MainActor @Observable public final class RemoteTopChrome {
    /// How tall status bar and island are together.
    public private(set) var inset: Double
    /// Whether the island shows.
    public private(set) var isRevealed: Bool

    @ObservationIgnored public let session: ChromeSession
    @ObservationIgnored private var following: Task<Void, Never>?
    /// Reports and disappearances in the order the view made them; a task
    /// hands them to the session one after the other.
    @ObservationIgnored private let changes: AsyncStream<Change>.Continuation

    private enum Change {
        case report(contentOffsetY: Double, contentInsetTop: Double)
        case disappear
    }

    /// Until the first state arrives: no inset, island shown, as at the top.
    public init(session: ChromeSession) {
        self.session = session
        inset = 0
        isRevealed = true
        let (changes, continuation) = AsyncStream.makeStream(of: Change.self)
        self.changes = continuation
        Task { [session] in
            for await change in changes {
                switch change {
                case let .report(offset, inset):
                    await session.report(contentOffsetY: offset, contentInsetTop: inset)
                case .disappear:
                    await session.enqueue(.disappear)
                }
            }
        }
    }

    deinit {
        changes.finish()
    }

    /// Follows the session's states until `stop`. The task holds this object
    /// until then: stop when the screen goes away.
    public func start() {
        guard following == nil else { return }
        let states = session.states()
        following = Task {
            do {
                for try await state in states { apply(state) }
            } catch {
                // Gone, refused or stopped: the last state stays shown.
            }
        }
    }

    /// Ends the event stream and its connection.
    public func stop() {
        following?.cancel()
        following = nil
    }

    /// The outer vertical scroll view's geometry; queued, returns at once.
    public func report(contentOffsetY: Double, contentInsetTop: Double) {
        changes.yield(.report(contentOffsetY: contentOffsetY, contentInsetTop: contentInsetTop))
    }

    /// The screen went away: the island shows at once, for the next screen,
    /// and the service is told.
    public func disappear() {
        if !isRevealed { isRevealed = true }
        changes.yield(.disappear)
    }

    private func apply(_ state: ChromeState) {
        if inset != state.inset { inset = state.inset }
        if isRevealed != state.isRevealed { isRevealed = state.isRevealed }
    }
}
