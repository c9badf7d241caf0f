/// A session as a store returns it: its id and its chrome at that moment.
public struct Session: Sendable, Hashable {
    public let id: SessionID
    public let state: ChromeState

    public init(id: SessionID, state: ChromeState) {
        self.id = id
        self.state = state
    }
}

public enum SessionStoreError: Error, Hashable {
    /// The store holds as many sessions as it may; a client can retry later.
    case full(capacity: Int)
}

/// Keeps sessions and applies ``ChromeRules`` to them.
///
/// Every change to one session is applied one at a time, in order: a client
/// reporting scrolls many times a second must never see two changes
/// interleave. Different sessions need not wait for each other.
/// Behind this protocol a networked store can replace the in-memory one.
public protocol SessionStore: Sendable {
    /// Creates a session with a fresh id and the given inset.
    func create(inset: Double) throws(SessionStoreError) -> Session

    /// The session, or nil if it does not exist (or has expired).
    func session(_ id: SessionID) -> Session?

    /// Applies `inputs` in order as one unit: no other change to the session
    /// lands between them. Returns the session afterwards, or nil if it does not exist.
    func apply(_ inputs: [ChromeInput], to id: SessionID) -> Session?

    /// Removes the session; false if there was none.
    func remove(_ id: SessionID) -> Bool

    /// Sessions held now.
    var count: Int { get }
}
