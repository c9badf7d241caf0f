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

    init(_ kind: Kind, to subscribers: [any SessionSubscriber]) {
        self.kind = kind
        self.subscribers = subscribers
    }
}
