import Locking
import TopChromeCore

/// Whether Redis, connected, refuses every change this replica sends: the
/// library gone from a node whose user may not load it, or a command the
/// user may not run. Requests then all fail while the connections look
/// healthy; `/readyz` says so, with the reason, until a check finds the
/// user may run the library's commands again.
final class WriteRefusals: @unchecked Sendable {
    private let lock = PthreadLock()
    // Guarded by `lock`.
    private var reason: String?
    private var checking = false

    var current: String? { lock.withLock { reason } }

    /// Starts a check unless one is under way; false when one is.
    func beginCheck() -> Bool {
        lock.withLock {
            defer { checking = true }
            return !checking
        }
    }

    func endCheck(_ found: String?) {
        lock.withLock {
            reason = found
            checking = false
        }
    }

    /// What a check's answer says of changes: nil when they can succeed.
    static func reason(_ result: Result<[String], ChromeFunctionError>) -> String? {
        switch result {
        case let .success(missing) where missing.isEmpty:
            return nil
        case let .success(missing):
            return "the Redis user may not run " + missing.joined(separator: ", ") + ", which every change needs"
        case let .failure(.refused(message)) where message.hasPrefix("ERR Function not found"):
            return "the function library is missing on Redis and the Redis user may not load it (FUNCTION LOAD)"
        case let .failure(.refused(message)) where message.hasPrefix("NOPERM"):
            return "Redis refuses the service's calls: \(message.prefix(160))"
        case .failure:
            // No answer, or another refusal: an outage, told by the connections.
            return nil
        }
    }
}

extension RedisSessionStore {
    /// Asks Redis whether changes can succeed (the library present, every
    /// command of it permitted), for `/readyz`. The service calls it while
    /// Redis answers with refusals that would fail every change, and until
    /// they are gone.
    public func checkWrites(completion: @escaping @Sendable () -> Void = {}) {
        guard writeRefusals.beginCheck() else { return completion() }
        functions.refusedCommands { [writeRefusals] result in
            writeRefusals.endCheck(WriteRefusals.reason(result))
            completion()
        }
    }

    /// Why changes cannot succeed now, as the last check found; nil when they can.
    public var writesRefused: String? { writeRefusals.current }
}
