import TopChromeCore

/// Which states a watcher passes on. Versions go backwards only when the
/// store does: a state older than one already sent is dropped, unless it
/// is the store's state read again after its feed lost touch (a failover
/// can lose the last acknowledged changes; the client must then hold what
/// the store holds). A state with the version last sent but another tag
/// is one that replaced a lost state, and is sent.
struct SentStates {
    /// Nil until the client has a state: none sent, and none it named.
    private(set) var last: EntityTag?

    /// Whether `tag` is to be sent; if so it is noted as sent.
    mutating func admit(_ tag: EntityTag, isResynchronization: Bool = false) -> Bool {
        if let last {
            let isNewer = tag.version > last.version
            let replacesLost = tag != last && (isResynchronization || tag.version == last.version)
            guard isNewer || replacesLost else { return false }
        }
        last = tag
        return true
    }

    /// The client already has `tag` (it named it): later states are judged against it.
    mutating func clientHas(_ tag: EntityTag) {
        if (last?.version ?? 0) < tag.version { last = tag }
    }
}
