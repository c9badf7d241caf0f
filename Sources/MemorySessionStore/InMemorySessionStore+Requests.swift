import TopChromeCore

/// The store as the API sees it: every answer comes `.now`, on the calling
/// thread, with nothing allocated for it.
extension InMemorySessionStore {
    public var readiness: StoreReadiness { .ready }

    public var sessionCount: Int? { count }

    public func requestCreate(inset: Double, settings: RevealSettings) -> StoreAnswer<Session> {
        do {
            return .now(.success(try create(inset: inset, settings: settings)))
        } catch {
            switch error {
            case let .full(capacity): return .now(.failure(.full(capacity: capacity)))
            }
        }
    }

    public func requestSession(_ id: SessionID) -> StoreAnswer<Session?> {
        .now(.success(session(id)))
    }

    public func requestApply(_ inputs: [ChromeInput], to id: SessionID,
                             if condition: VersionCondition) -> StoreAnswer<StoreOutcome> {
        .now(.success(apply(inputs, to: id, if: condition)))
    }

    public func requestApply(_ input: ChromeInput, to id: SessionID,
                             if condition: VersionCondition) -> StoreAnswer<StoreOutcome> {
        .now(.success(apply(input, to: id, if: condition)))
    }

    public func requestRemove(_ id: SessionID, if condition: VersionCondition) -> StoreAnswer<StoreOutcome> {
        .now(.success(remove(id, if: condition)))
    }

    public func requestSubscribe(_ subscriber: any SessionSubscriber,
                                 to id: SessionID) throws(SubscriptionRefusal) -> StoreAnswer<Session?> {
        .now(.success(try subscribe(subscriber, to: id)))
    }

    /// Applies `inputs` unconditionally; the session afterwards, or nil if it does not exist.
    public func apply(_ inputs: [ChromeInput], to id: SessionID) -> Session? {
        guard case let .done(session, _) = apply(inputs, to: id, if: .always) else { return nil }
        return session
    }

    /// Removes the session; false if there was none.
    public func remove(_ id: SessionID) -> Bool {
        if case .done = remove(id, if: .always) { return true }
        return false
    }
}
