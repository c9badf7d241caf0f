import TopChromeCore

/// The calls for async code (tests and tools): the store itself uses the
/// completion forms, which hold no thread while Redis answers.
extension ChromeFunctions {
    public func create(_ id: SessionID, inset: Double, settings: RevealSettings = RevealSettings()) async throws(ChromeFunctionError) -> Session? {
        try await Self.awaiting { create(id, inset: inset, settings: settings, completion: $0) }
    }

    public func session(_ id: SessionID) async throws(ChromeFunctionError) -> Session? {
        try await Self.awaiting { session(id, completion: $0) }
    }

    public func apply(_ inputs: [ChromeInput], to id: SessionID, if condition: VersionCondition) async throws(ChromeFunctionError) -> AppliedInputs {
        try await Self.awaiting { apply(inputs, to: id, if: condition, completion: $0) }
    }

    public func remove(_ id: SessionID, if condition: VersionCondition) async throws(ChromeFunctionError) -> StoreOutcome {
        try await Self.awaiting { remove(id, if: condition, completion: $0) }
    }

    private static func awaiting<Value: Sendable>(_ start: (@escaping Completion<Value>) -> Void) async throws(ChromeFunctionError) -> Value {
        try await withCheckedContinuation { continuation in
            start { continuation.resume(returning: $0) }
        }.get()
    }
}
