import Redis
import TopChromeCore

/// How a call goes out: the command it is, and the deadline it carries
/// (`FunctionCall` takes it from there).
extension ChromeFunctions {
    /// `FCALL function 1 key arguments…`, encoded as it is written; for a
    /// change, `FCALL function 1 key tag deadline arguments…`.
    /// - Parameter head: `FCALL function 1` (or `FCALL_RO`), encoded once.
    /// - Parameter changed: set for a change: whether a reply is of one
    ///   that changed the session, which then waits for
    ///   `replicaAcknowledgement` (reads never do). A change carries its
    ///   deadline, on the node's clock, into the function, which refuses it
    ///   once past: its caller was told it timed out by then, and may have
    ///   retried elsewhere.
    func call<Value: Sendable>(_ head: EncodedArguments, _ id: SessionID, _ completion: @escaping Completion<Value>,
                               changed: (@Sendable (RESPValue) -> Bool)? = nil,
                               relay: (@Sendable (SessionID, RESPValue) -> [UInt8]?)? = nil,
                               arguments: @escaping @Sendable (inout RESPRequestBuilder) -> Void,
                               decode: @escaping @Sendable (SessionID, RESPValue) throws -> Value) {
        let key = key(for: id)
        // Routing, the node's clock and the `ASK` counts all go by the slot: computed once.
        let slot = HashSlot.of(key)
        @Sendable func send(_ deadline: DeadlineArgument?, until instant: ContinuousClock.Instant?) {
            var command = RESPRequestBuilder()
            command.append(head)
            command.append(key)
            if let deadline {
                command.append(StateTagSource.shared.next().hex)
                switch deadline {
                case let .milliseconds(milliseconds): command.append(milliseconds)
                case .unknown: command.append(Self.noDeadline)
                }
            }
            arguments(&command)
            FunctionCall(client, replicaAcknowledgement, id, key: key, slot: slot, request: command.take(), deadline: instant,
                         changed: changed, relay: relay, asked: client.askRedirections(forSlot: slot), decode: decode,
                         completion: completion).send()
        }
        guard changed != nil else { return send(nil, until: nil) }
        let deadline = ContinuousClock.now + client.commandTimeout
        // Nearly every call finds the node's clock read recently, and waits for nothing.
        if let milliseconds = client.freshRedisMilliseconds(at: deadline, forSlot: slot) {
            return send(.milliseconds(UInt64(max(0, milliseconds))), until: deadline)
        }
        client.redisMilliseconds(at: deadline, forSlot: slot) { time in
            switch time {
            case let .milliseconds(milliseconds): send(.milliseconds(UInt64(max(0, milliseconds))), until: deadline)
            case .unknown: send(.unknown, until: deadline)
            // Sent without one, a change could land after its caller's 503 and undo a retry.
            case let .refused(message): completion(.failure(.deadlineUnknown(message)))
            }
        }
    }

    private static let noDeadline = Array("none".utf8)

    /// A change's deadline as it goes to the function: on the node's clock,
    /// in Unix milliseconds (written straight into the command, without a
    /// string), or `none` when that clock could not be read.
    enum DeadlineArgument {
        case milliseconds(UInt64)
        case unknown
    }

    static let changesSuffix = Array(":changes".utf8)

    /// `WAIT replicas milliseconds`; never `WAIT n 0`, which waits forever.
    static func waitCommand(_ acknowledgement: ReplicaAcknowledgement) -> [[UInt8]] {
        let (seconds, attoseconds) = acknowledgement.timeout.components
        let milliseconds = max(1, seconds * 1000 + attoseconds / 1_000_000_000_000_000)
        return [Array("WAIT".utf8), text(UInt64(acknowledgement.replicas)), text(UInt64(milliseconds))]
    }

    /// Whether the library's `apply` changed the session, as its eighth element
    /// says: inputs that left it as it was (an inset it had, a report that
    /// moved nothing, stale reports) changed only its expiry. A reply
    /// without that element is taken to have changed it.
    static let appliedAChange: @Sendable (RESPValue) -> Bool = { reply in
        guard case let .array(values) = reply, values.count >= 7, values[0].string == "done" else { return false }
        return values.count < 8 || values[7].string != "0"
    }

    /// The library's answer to a change that came past its deadline.
    static func isLate(_ reply: RESPValue) -> Bool {
        guard case let .array(values) = reply, values.count == 1, case let .bulk(word) = values[0] else { return false }
        return word == lateWord
    }

    private static let lateWord = Array("late".utf8)

    static let isDone: @Sendable (RESPValue) -> Bool = { reply in
        guard case let .array(values) = reply, values.first?.string == "done" else { return false }
        return true
    }
}
