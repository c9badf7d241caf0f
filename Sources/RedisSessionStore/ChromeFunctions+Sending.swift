import Redis
import TopChromeCore

/// How a call goes out and comes back: the deadline it carries, the
/// library loaded again where it went missing, `WAIT` after a change, and
/// a change's state published again when it ran on a node importing its slot.
extension ChromeFunctions {
    /// `FCALL function 1 key arguments…`, encoded as it is written; for a
    /// change, `FCALL function 1 key tag deadline arguments…`.
    /// - Parameter changed: set for a change: whether a reply is of one
    ///   that changed the session, which then waits for
    ///   `replicaAcknowledgement` (reads never do). A change carries its
    ///   deadline, on the node's clock, into the function, which refuses it
    ///   once past: its caller was told it timed out by then, and may have
    ///   retried elsewhere.
    func call<Value>(_ function: [UInt8], _ id: SessionID, _ completion: @escaping Completion<Value>,
                             command name: [UInt8] = fcall, changed: (@Sendable (RESPValue) -> Bool)? = nil,
                             relay: (@Sendable (RESPValue) -> [UInt8]?)? = nil,
                             arguments: @escaping @Sendable (inout RESPRequestBuilder) -> Void,
                             decode: @escaping @Sendable (RESPValue) throws -> Value) {
        let key = key(for: id)
        // Routing, the node's clock and the `ASK` counts all go by the slot: computed once.
        let slot = HashSlot.of(key)
        let written: @Sendable (DeadlineArgument?) -> RESPRequest = { deadline in
            var command = RESPRequestBuilder()
            command.append(name)
            command.append(function)
            command.append(Self.oneKey)
            command.append(key)
            if let deadline {
                command.append(StateTagSource.shared.next().hex)
                switch deadline {
                case let .milliseconds(milliseconds): command.append(milliseconds)
                case .unknown: command.append(Self.noDeadline)
                }
            }
            arguments(&command)
            return command.request
        }
        guard changed != nil else {
            return send(written(nil), key: key, slot: slot, deadline: nil, completion, reloading: true, changed: changed,
                        relay: Relay(message: nil, asked: client.askRedirections(forSlot: slot)), decode: decode)
        }
        let deadline = ContinuousClock.now + client.commandTimeout
        client.redisMilliseconds(at: deadline, forSlot: slot) { [self] milliseconds in
            let word = milliseconds.map { DeadlineArgument.milliseconds(UInt64(max(0, $0))) } ?? .unknown
            let relaying = Relay(message: relay, asked: client.askRedirections(forSlot: slot))
            send(written(word), key: key, slot: slot, deadline: deadline, completion, reloading: true, changed: changed, relay: relaying,
                 decode: decode)
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

    /// The `ASK`s of a call's slot counted before it was sent (a call
    /// redirected meanwhile may have run on a node importing the slot), and
    /// for a change what it publishes, made of its reply.
    struct Relay: Sendable {
        let message: (@Sendable (RESPValue) -> [UInt8]?)?
        let asked: UInt32
    }

    /// A change that may have run on a node importing its slot (an `ASK`
    /// for the slot came meanwhile) published there, where no watcher
    /// listens: the slot's channels stay on the migrating node until the
    /// migration ends. Its state is published again through the slot's
    /// owner, before the caller is answered, so that a client's next
    /// change is heard after it; watchers drop what they heard already.
    private func relayed(_ result: Result<RESPValue, RedisError>, _ relay: Relay?, key: [UInt8], slot: Int,
                         then finish: @escaping @Sendable () -> Void) {
        guard let relay, case let .success(reply) = result, client.askRedirections(forSlot: slot) != relay.asked,
              let message = relay.message?(reply) else { return finish() }
        let channel = key + Self.changesSuffix
        client.send([Self.spublish, channel, message], key: channel) { _ in finish() }
    }

    private static let changesSuffix = Array(":changes".utf8)

    /// `slot`: `HashSlot.of(key)`.
    func send<Value>(_ request: RESPRequest, key: [UInt8], slot: Int, deadline: ContinuousClock.Instant?,
                             _ completion: @escaping Completion<Value>,
                             reloading: Bool, changed: (@Sendable (RESPValue) -> Bool)?, relay: Relay? = nil,
                             decode: @escaping @Sendable (RESPValue) throws -> Value) {
        // The node lost the library while connected (`FUNCTION FLUSH`, a
        // restore without it): load it there again, and call once more.
        let reloaded: @Sendable (Result<RESPValue, RedisError>) -> Bool = { [self] result in
            guard reloading, case let .success(.error(message)) = result, message.hasPrefix("ERR Function not found") else {
                return false
            }
            let again: RedisCompletion = { _ in
                send(request, key: key, slot: slot, deadline: deadline, completion, reloading: false, changed: changed, relay: relay,
                     decode: decode)
            }
            // A node importing the slot, which the call may have reached by
            // `ASK`, is not the one routing by key reaches: load it there too.
            if let relay, client.askRedirections(forSlot: slot) != relay.asked {
                client.send(Self.loadCommand, key: key) { [client] _ in
                    client.sendToImporter(ofKey: key, Self.loadCommand, completion: again)
                }
            } else {
                client.send(Self.loadCommand, key: key, completion: again)
            }
            return true
        }
        guard let changed, let acknowledgement = replicaAcknowledgement else {
            // A read (no `changed`) may run twice: it is sent again if its connection drops under it.
            client.send(request, slot: slot, deadline: deadline, idempotent: changed == nil) { [self] result in
                if !reloaded(result) { relayed(result, relay, key: key, slot: slot) { Self.finish(result, completion, decode) } }
            }
            return
        }
        let wait = Self.waitCommand(acknowledgement)
        client.send(request, slot: slot, deadline: deadline, followedBy: { reply in
            // WAIT's own timeout, and as long again for its answer to come back.
            changed(reply) ? RedisClient.FollowUp(wait, deadline: .now + acknowledgement.timeout * 2) : nil
        }) { [self] result, confirmation in
            // An error reply is no change: nothing followed it.
            if reloaded(result) { return }
            relayed(result, relay, key: key, slot: slot) { Self.acknowledged(result, confirmation, acknowledgement, completion, decode) }
        }
    }

    private static func acknowledged<Value>(_ result: Result<RESPValue, RedisError>, _ confirmation: Result<RESPValue, RedisError>?,
                                            _ acknowledgement: ReplicaAcknowledgement, _ completion: Completion<Value>,
                                            _ decode: (RESPValue) throws -> Value) {
        switch confirmation {
        case nil:
            finish(result, completion, decode)
        case let .success(.integer(count)) where count >= Int64(acknowledgement.replicas):
            finish(result, completion, decode)
        case let .success(.integer(count)):
            completion(.failure(.notReplicated(wanted: acknowledgement.replicas, acknowledged: Int(count))))
        case .success, .failure:
            completion(.failure(.notReplicated(wanted: acknowledgement.replicas, acknowledged: nil)))
        }
    }

    /// `WAIT replicas milliseconds`; never `WAIT n 0`, which waits forever.
    static func waitCommand(_ acknowledgement: ReplicaAcknowledgement) -> [[UInt8]] {
        let (seconds, attoseconds) = acknowledgement.timeout.components
        let milliseconds = max(1, seconds * 1000 + attoseconds / 1_000_000_000_000_000)
        return [Array("WAIT".utf8), text(UInt64(acknowledgement.replicas)), text(UInt64(milliseconds))]
    }

    private static func finish<Value>(_ result: Result<RESPValue, RedisError>, _ completion: Completion<Value>,
                                      _ decode: (RESPValue) throws -> Value) {
        switch result {
        case let .failure(error):
            completion(.failure(.redis(error)))
        case let .success(.error(message)):
            completion(.failure(.refused(message)))
        case let .success(reply) where isLate(reply):
            completion(.failure(.late))
        case let .success(reply):
            do {
                completion(.success(try decode(reply)))
            } catch let error as ChromeFunctionError {
                completion(.failure(error))
            } catch {
                completion(.failure(.unexpectedReply(reply)))
            }
        }
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
        reply == .array([.bulk(Array("late".utf8))])
    }

    static let isDone: @Sendable (RESPValue) -> Bool = { reply in
        guard case let .array(values) = reply, values.first?.string == "done" else { return false }
        return true
    }
}
