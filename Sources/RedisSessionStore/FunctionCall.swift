import Redis
import TopChromeCore

/// One call of a library function on its way out and back: the library
/// loaded again where it went missing, `WAIT` after a change, and a
/// change's state published again when it ran on a node importing its
/// slot. What the steps share is held here once, where a closure per step
/// would each be made and freed for every scroll report.
final class FunctionCall<Value: Sendable>: Sendable {
    // The two parts of `ChromeFunctions` a call uses, not all of it: each
    // reference held is taken and let go once more per call.
    let client: RedisClient
    let acknowledgement: ReplicaAcknowledgement?
    let id: SessionID
    let key: [UInt8]
    /// `HashSlot.of(key)`: routing, the node's clock and the `ASK` counts all go by it.
    let slot: Int
    let request: RESPRequest
    /// A change's, which it carries into Redis; nil for a read (the client's timeout).
    let deadline: ContinuousClock.Instant?
    /// Whether a "Function not found" is answered by loading the library and calling once more (not twice).
    let reloading: Bool
    /// Set for a change: whether a reply is of one that changed the session,
    /// which then waits for `replicaAcknowledgement` (reads never do).
    let changed: (@Sendable (RESPValue) -> Bool)?
    /// For a change: what it publishes, made of its reply.
    let relay: (@Sendable (SessionID, RESPValue) -> [UInt8]?)?
    /// The `ASK`s of the slot counted before the call went (nil when no
    /// one asks): a call redirected meanwhile may have run on a node importing the slot.
    let asked: UInt32?
    let decode: @Sendable (SessionID, RESPValue) throws -> Value
    let completion: ChromeFunctions.Completion<Value>

    init(_ client: RedisClient, _ acknowledgement: ReplicaAcknowledgement?, _ id: SessionID, key: [UInt8], slot: Int,
         request: RESPRequest, deadline: ContinuousClock.Instant?, reloading: Bool = true, changed: (@Sendable (RESPValue) -> Bool)?,
         relay: (@Sendable (SessionID, RESPValue) -> [UInt8]?)?, asked: UInt32?,
         decode: @escaping @Sendable (SessionID, RESPValue) throws -> Value, completion: @escaping ChromeFunctions.Completion<Value>) {
        self.client = client
        self.acknowledgement = acknowledgement
        self.id = id
        self.key = key
        self.slot = slot
        self.request = request
        self.deadline = deadline
        self.reloading = reloading
        self.changed = changed
        self.relay = relay
        self.asked = asked
        self.decode = decode
        self.completion = completion
    }

    func send() {
        guard let changed, let acknowledgement else {
            // A read (no `changed`) may run twice: it is sent again if its connection drops under it.
            client.send(request, slot: slot, deadline: deadline, idempotent: changed == nil) { [self] result in
                answered(result, confirmation: nil, acknowledgement: nil)
            }
            return
        }
        let wait = ChromeFunctions.waitCommand(acknowledgement)
        client.send(request, slot: slot, deadline: deadline, followedBy: { reply in
            // WAIT's own timeout, and as long again for its answer to come back.
            changed(reply) ? RedisClient.FollowUp(wait, deadline: .now + acknowledgement.timeout * 2) : nil
        }) { [self] result, confirmation in
            // An error reply is no change: nothing followed it.
            answered(result, confirmation: confirmation, acknowledgement: acknowledgement)
        }
    }

    private func answered(_ result: Result<RESPValue, RedisError>, confirmation: Result<RESPValue, RedisError>?,
                          acknowledgement: ReplicaAcknowledgement?) {
        if reloaded(result) { return }
        guard let message = relayedMessage(result) else { return finish(result, confirmation, acknowledgement) }
        let channel = key + ChromeFunctions.changesSuffix
        client.send([ChromeFunctions.spublish, channel, message], key: channel) { [self] _ in
            finish(result, confirmation, acknowledgement)
        }
    }

    /// Whether the call ran on a node importing its slot (an `ASK` for the
    /// slot came meanwhile) since it was sent.
    private var mayHaveRunOnImporter: Bool {
        asked.map { client.askRedirections(forSlot: slot) != $0 } ?? false
    }

    /// A change that may have run on a node importing its slot published
    /// there, where no watcher listens: the slot's channels stay on the
    /// migrating node until the migration ends. Its state is published
    /// again through the slot's owner, before the caller is answered, so
    /// that a client's next change is heard after it; watchers drop what
    /// they heard already. Nil when there is nothing to publish again.
    private func relayedMessage(_ result: Result<RESPValue, RedisError>) -> [UInt8]? {
        guard let relay, case let .success(reply) = result, mayHaveRunOnImporter else { return nil }
        return relay(id, reply)
    }

    /// The node lost the library while connected (`FUNCTION FLUSH`, a
    /// restore without it): loads it there again, and calls once more.
    private func reloaded(_ result: Result<RESPValue, RedisError>) -> Bool {
        guard reloading, case let .success(.error(message)) = result, message.hasPrefix("ERR Function not found") else {
            return false
        }
        let again = FunctionCall(client, acknowledgement, id, key: key, slot: slot, request: request, deadline: deadline,
                                 reloading: false, changed: changed, relay: relay, asked: asked, decode: decode, completion: completion)
        // A node importing the slot, which the call may have reached by
        // `ASK`, is not the one routing by key reaches: load it there too.
        if mayHaveRunOnImporter {
            client.send(ChromeFunctions.loadCommand, key: key) { [client, key] _ in
                client.sendToImporter(ofKey: key, ChromeFunctions.loadCommand) { _ in again.send() }
            }
        } else {
            client.send(ChromeFunctions.loadCommand, key: key) { _ in again.send() }
        }
        return true
    }

    private func finish(_ result: Result<RESPValue, RedisError>, _ confirmation: Result<RESPValue, RedisError>?,
                        _ acknowledgement: ReplicaAcknowledgement?) {
        guard let acknowledgement else { return finish(result) }
        switch confirmation {
        case nil:
            finish(result)
        case let .success(.integer(count)) where count >= Int64(acknowledgement.replicas):
            finish(result)
        case let .success(.integer(count)):
            completion(.failure(.notReplicated(wanted: acknowledgement.replicas, acknowledged: Int(count))))
        case .success, .failure:
            completion(.failure(.notReplicated(wanted: acknowledgement.replicas, acknowledged: nil)))
        }
    }

    private func finish(_ result: Result<RESPValue, RedisError>) {
        switch result {
        case let .failure(error):
            completion(.failure(.redis(error)))
        case let .success(.error(message)):
            completion(.failure(.refused(message)))
        case let .success(reply) where ChromeFunctions.isLate(reply):
            completion(.failure(.late))
        case let .success(reply):
            do {
                completion(.success(try decode(id, reply)))
            } catch let error as ChromeFunctionError {
                completion(.failure(error))
            } catch {
                completion(.failure(.unexpectedReply(reply)))
            }
        }
    }
}
