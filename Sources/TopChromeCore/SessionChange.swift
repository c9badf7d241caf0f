/// One change of a session as subscribers receive it, made once however
/// many subscribe: one change may fan out to thousands of watchers.
public final class SessionChange: @unchecked Sendable {
    public let session: Session
    /// The state read again after a feed lost its source for a while, not
    /// one change: it may even be older than one already delivered, since a
    /// failover can lose the last acknowledged changes. Deliver it if its
    /// entity tag differs from the one delivered last, not only if its
    /// version is greater.
    public let isResynchronization: Bool
    private var rendered: [UInt8]?

    public init(_ session: Session, isResynchronization: Bool = false) {
        self.session = session
        self.isResynchronization = isResynchronization
    }

    /// What `render` makes of the change, made by the first subscriber that
    /// asks and reused by the others. Subscribers are told of a change one
    /// at a time, so no two threads ask at once.
    public func rendering(_ render: (Session) -> [UInt8]) -> [UInt8] {
        if let rendered { return rendered }
        let bytes = render(session)
        rendered = bytes
        return bytes
    }
}
