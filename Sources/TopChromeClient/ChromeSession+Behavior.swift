import TopChromeCore

extension ChromeSession {
    /// Chooses how the chrome follows scrolling from now on, after
    /// everything queued before it. The call names the whole choice: a
    /// height left out collapses the whole inset, and snapping is off unless
    /// asked for. The chrome stays where it stands and the new behaviour
    /// takes it from there; a `RemoteTopChrome` predicts with it as soon as
    /// the service's state names it.
    @discardableResult
    public func setBehavior(_ behavior: RevealBehavior, collapsibleHeight: Double? = nil,
                            snap: Bool = false) async throws -> SessionState {
        if let collapsibleHeight, !collapsibleHeight.isFinite {
            throw TopChromeError.invalidValue("collapsibleHeight \(collapsibleHeight) is not finite")
        }
        return try await perform(.behavior(BehaviorBody(behavior: behavior.rawValue, collapsibleHeight: collapsibleHeight,
                                                        snap: snap)))
    }
}

/// The body of `PUT /v1/sessions/{id}/behavior`; a nil height is left out.
struct BehaviorBody: Encodable, Sendable {
    var behavior: RevealBehavior.RawValue
    var collapsibleHeight: Double?
    var snap: Bool
}
