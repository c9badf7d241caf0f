import TopChromeCore

/// A change and the subscribers to tell of it, as a store collected them
/// while holding the session (``SessionSubscriptions/collect(_:isResynchronization:)``).
public struct ChangeDelivery: Sendable {
    enum Kind: Sendable {
        case changed(SessionChange)
        case removed(SessionID)
        case unheard(SessionID)
    }

    let kind: Kind
    let subscribers: [any SessionSubscriber]

    /// The session the change is of.
    public var sessionID: SessionID {
        switch kind {
        case let .changed(change): change.session.id
        case let .removed(id), let .unheard(id): id
        }
    }

    init(_ kind: Kind, to subscribers: [any SessionSubscriber]) {
        self.kind = kind
        self.subscribers = subscribers
    }

    /// A change for one subscriber alone: what it missed while its first
    /// state was being read (the Redis feed).
    public static func changed(_ change: SessionChange, to subscriber: any SessionSubscriber) -> ChangeDelivery {
        ChangeDelivery(.changed(change), to: [subscriber])
    }

    /// The session's removal, for one subscriber alone, whose subscription
    /// the feed ended with it.
    public static func removed(_ id: SessionID, to subscriber: any SessionSubscriber) -> ChangeDelivery {
        ChangeDelivery(.removed(id), to: [subscriber])
    }
}
