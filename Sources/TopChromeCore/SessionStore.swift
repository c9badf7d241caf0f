/// A session as a store returns it: its id, its chrome at that moment, and
/// the tag that, with the version, names that state to clients (see ``StateTag``).
public struct Session: Sendable, Hashable {
    public let id: SessionID
    public let state: ChromeState
    public let tag: StateTag

    public init(id: SessionID, state: ChromeState, tag: StateTag) {
        self.id = id
        self.state = state
        self.tag = tag
    }

    /// The state's name for clients: its ETag and its event id.
    public var entityTag: EntityTag {
        EntityTag(version: state.version, tag: tag)
    }
}

/// What a store publishes to its subscriptions (`SessionSubscriptions`), in the order it happened to each session.
public enum SessionEvent: Sendable, Hashable {
    /// The chrome changed; the session as it is now.
    case changed(Session)
    /// The session is gone: deleted, or dropped after being idle.
    case removed(SessionID)
}

/// A condition on a session's state, named by its entity tag (version and
/// tag), that a change must meet to be applied. Clients that read a state
/// and then change it use this to make sure nobody else changed it in
/// between (optimistic concurrency). Versions alone would not do: after a
/// failover one version can name two states.
public enum VersionCondition: Sendable, Hashable {
    case always
    /// Only if the current state is one of these.
    case oneOf(Set<EntityTag>)
    /// Only if the current state is none of these.
    case noneOf(Set<EntityTag>)
    /// Never (e.g. "only if the session does not exist yet", asked of one that does).
    case never
    /// Only if every one of these holds.
    indirect case all([VersionCondition])

    public func holds(for current: EntityTag) -> Bool {
        switch self {
        case .always: true
        case let .oneOf(tags): tags.contains(current)
        case let .noneOf(tags): !tags.contains(current)
        case .never: false
        case let .all(conditions): conditions.allSatisfy { $0.holds(for: current) }
        }
    }
}

/// What became of a request to change a session.
public enum StoreOutcome: Sendable, Hashable {
    /// Done; the session as it is afterwards (for a removal: as it was).
    /// `staleReports`: scroll reports ignored because their `seq` was not
    /// newer than one applied before; a client whose seq went backwards
    /// (a clock stepped back, a counter reset) learns of it from this.
    case done(Session, staleReports: Int = 0)
    /// The condition did not hold; nothing changed. The session as it is.
    case conditionFailed(Session)
    case notFound
}

public enum SessionStoreError: Error, Hashable {
    /// The store holds as many sessions as it may; a client can retry later.
    case full(capacity: Int)
}

/// Keeps sessions and applies ``ChromeRules`` to them: the one interface the
/// API serves, whether the sessions live in this process or in another.
///
/// Every change to one session is applied one at a time, in order: a client
/// reporting scrolls many times a second must never see two changes
/// interleave. Different sessions need not wait for each other. Each
/// request's answer may come at once or later (see ``StoreAnswer``); the
/// names say "request" so they stand apart from a store's own direct calls.
public protocol SessionStore: Sendable {
    /// Whether the store can serve now; a store in this process always can.
    var readiness: StoreReadiness { get }

    /// Sessions held now, for a store that knows without asking anyone.
    var sessionCount: Int? { get }

    /// Creates a session with a fresh id, the given inset and behaviour.
    func requestCreate(inset: Double, settings: RevealSettings) -> StoreAnswer<Session>

    /// The session, or nil if it does not exist (or has expired). A read is
    /// a use: it keeps the session from expiring.
    func requestSession(_ id: SessionID) -> StoreAnswer<Session?>

    /// Applies `inputs` in order as one unit, if `condition` holds for the
    /// session's state at that moment: no other change to the session lands
    /// between the check and the inputs, nor between the inputs.
    func requestApply(_ inputs: [ChromeInput], to id: SessionID, if condition: VersionCondition) -> StoreAnswer<StoreOutcome>

    /// Applies one input, as a batch of one: a scroll report usually comes
    /// alone, and then no array need be built for it.
    func requestApply(_ input: ChromeInput, to id: SessionID, if condition: VersionCondition) -> StoreAnswer<StoreOutcome>

    /// Removes the session if `condition` holds for its state.
    func requestRemove(_ id: SessionID, if condition: VersionCondition) -> StoreAnswer<StoreOutcome>
}

extension SessionStore {
    /// Creates a session that reveals at the top.
    public func requestCreate(inset: Double) -> StoreAnswer<Session> {
        requestCreate(inset: inset, settings: RevealSettings())
    }

    public func requestApply(_ input: ChromeInput, to id: SessionID, if condition: VersionCondition) -> StoreAnswer<StoreOutcome> {
        requestApply([input], to: id, if: condition)
    }
}
