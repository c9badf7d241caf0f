import Redis
import TopChromeCore

/// Why a call of the function library got no usable answer.
public enum ChromeFunctionError: Error, Sendable, Hashable {
    /// No reply from Redis (see `RedisError`); the change may or may not have happened.
    case redis(RedisError)
    /// Redis answered with an error: the library is not loaded (after a
    /// restart or failover without it), or it refused an argument, and then
    /// nothing changed.
    case refused(String)
    /// A reply the library does not give: another library under its name.
    case unexpectedReply(RESPValue)
    /// The change was made, but fewer replicas than `wanted` acknowledged it
    /// within the wait (`acknowledged` nil: `WAIT` got no answer), so a
    /// failover could still lose it.
    case notReplicated(wanted: Int, acknowledged: Int?)
    /// The change reached Redis past its deadline (the moment its caller
    /// was told it timed out) and was refused: nothing changed.
    case late
    /// The change was not sent: Redis refused to tell its clock (`TIME`,
    /// its error reply here), so the change could carry no deadline.
    case deadlineUnknown(String)
}

/// How many replicas of a session's primary must hold a change before it
/// is acknowledged, and how long to wait for them: Redis replicates
/// asynchronously, and a failover loses what the promoted replica had not
/// received. Each change is followed by `WAIT`.
public struct ReplicaAcknowledgement: Sendable, Hashable {
    public let replicas: Int
    public let timeout: Duration

    public init(replicas: Int, timeout: Duration) {
        self.replicas = replicas
        self.timeout = timeout
    }
}

/// What a batch of inputs did: the store's outcome, and what became of each
/// scroll report in it (for the statistics the memory store keeps too).
public struct AppliedInputs: Sendable, Hashable {
    public let outcome: StoreOutcome
    /// One per scroll report of the batch, in order; empty unless `.done`.
    public let reports: [ReportOutcome]

    public init(outcome: StoreOutcome, reports: [ReportOutcome]) {
        self.outcome = outcome
        self.reports = reports
    }
}

/// The chrome's rules inside Redis: typed calls of the `topchrome_<version>`
/// function library (topchrome.lua), each one `FCALL`, one round trip, atomic.
///
/// A session is the hash `<keyPrefix>{<id>}`; the id is the hash tag, so in
/// a cluster the session and its change channel live on one shard. Every
/// use of a session that succeeds slides its expiry to `idleTimeout` from
/// now, as the memory store's idle clock does.
public struct ChromeFunctions: Sendable {
    /// The library's name: `topchrome_` and a digest of its text, so any
    /// change to a function gives it a new name without anyone keeping a
    /// number. Replicas of two builds then share a Redis during a rolling
    /// upgrade, each calling its own library (loading one never replaces
    /// the other). Its functions are `<name>_create` and so on.
    public static let libraryName = "topchrome_" + digest(of: functionLibrary)

    /// The library's text as it is loaded: topchrome.lua under its name.
    public static let library: String = functionLibrary
        .replacing("#!lua name=\(sourceName)\n", with: "#!lua name=\(libraryName)\n")
        .replacing("local LIBRARY = '\(sourceName)'\n", with: "local LIBRARY = '\(libraryName)'\n")

    /// The name topchrome.lua carries as a file; loaded under ``libraryName``.
    static let sourceName = "topchrome_source"

    /// Loads (or replaces) the library. Sent to a primary that answers
    /// "Function not found", never as a condition for a connection: a
    /// replica, a Redis still loading its data, or an ACL user who may only
    /// call the functions must not keep a connection from serving.
    public static var loadCommand: [[UInt8]] {
        [Array("FUNCTION".utf8), Array("LOAD".utf8), Array("REPLACE".utf8), Array(library.utf8)]
    }

    /// 64-bit FNV-1a of the text, as 16 hex digits: it tells versions of
    /// one file apart (no one chooses the text to collide).
    static func digest(of text: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    public let client: RedisClient
    public let keyPrefix: String
    public let rules: ChromeRules
    /// Nil keeps sessions until deleted.
    public let idleTimeout: Duration?
    /// Nil acknowledges a change once its primary made it.
    public let replicaAcknowledgement: ReplicaAcknowledgement?
    // The same words in every call, written once.
    private let keyPrefixBytes: [UInt8]
    private let ttlArgument: [UInt8]
    /// The idle timeout and the reveal threshold, as every `apply` passes them.
    private let applySettings: EncodedArguments

    public init(client: RedisClient, keyPrefix: String = "topchrome:", rules: ChromeRules = ChromeRules(),
                idleTimeout: Duration? = .seconds(3600), replicaAcknowledgement: ReplicaAcknowledgement? = nil) {
        self.client = client
        self.keyPrefix = keyPrefix
        self.rules = rules
        self.idleTimeout = idleTimeout
        self.replicaAcknowledgement = replicaAcknowledgement
        keyPrefixBytes = Array(keyPrefix.utf8)
        ttlArgument = Self.ttlArgument(idleTimeout)
        applySettings = EncodedArguments([ttlArgument, Self.text(rules.revealThreshold)])
    }

    public func key(for id: SessionID) -> [UInt8] {
        let length = keyPrefixBytes.count + 34
        return [UInt8](unsafeUninitializedCapacity: length) { buffer, initialized in
            var index = buffer.initialize(fromContentsOf: keyPrefixBytes)
            buffer[index] = UInt8(ascii: "{")
            index += 1
            id.writeHexDigits(to: UnsafeMutableBufferPointer(rebasing: buffer[index..<index + 32]))
            buffer[index + 32] = UInt8(ascii: "}")
            initialized = length
        }
    }

    /// Where changes of the session are published (`SSUBSCRIBE` it on the node serving the key).
    public func channel(for id: SessionID) -> [UInt8] {
        key(for: id) + Array(":changes".utf8)
    }

    public typealias Completion<Value> = @Sendable (Result<Value, ChromeFunctionError>) -> Void

    /// Creates the session `id`, revealed at version 1; nil if the id is taken.
    public func create(_ id: SessionID, inset: Double, settings: RevealSettings = RevealSettings(),
                       completion: @escaping Completion<Session?>) {
        call(Self.createCall, id, completion, changed: { $0 != .null && !Self.isLate($0) }, arguments: { [ttlArgument] in
            $0.append(ttlArgument)
            $0.append(inset)
            Self.append(.setBehavior(settings), to: &$0)
        }, decode: Self.doneSession)
    }

    /// The session, as a use of it; nil if there is none (or it expired).
    /// When Redis takes no writes (a failed save, too few replicas), read
    /// without sliding the expiry: a read must not fail for a write it need not make.
    public func session(_ id: SessionID, completion: @escaping Completion<Session?>) {
        call(Self.getCall, id, { [self] result in
            guard case let .failure(.refused(message)) = result, Self.refusesWrites(message) else { return completion(result) }
            call(Self.readCall, id, completion, arguments: { _ in }, decode: Self.doneSession)
        }, arguments: {
            $0.append(StateTagSource.shared.next().hex)
            $0.append(ttlArgument)
        }, decode: Self.doneSession)
    }

    /// A reply of `create`, `get` or `read`: the session, nil for none.
    private static let doneSession: @Sendable (SessionID, RESPValue) throws -> Session? = { id, reply in
        try session(id, from: reply, status: "done")
    }

    /// What the periodic check of watched sessions learns of one.
    public enum WatchedState: Sendable, Hashable {
        case gone
        /// Its entity tag's text; empty for a state without one.
        case tagged(String)
    }

    /// Slides the expiry of each session (all in one slot, in a cluster) and
    /// tells its entity tag, in one call: the periodic check of the
    /// sessions watched here, which keeps them from expiring and finds any
    /// change whose message was missed, at one command per many sessions.
    public func watched(_ ids: [SessionID], completion: @escaping Completion<[WatchedState]>) {
        guard let first = ids.first else { return completion(.success([])) }
        var command = RESPRequestBuilder()
        command.append(Self.fcall)
        command.append(Self.watchedFunction)
        command.append(UInt64(ids.count))
        for id in ids { command.append(key(for: id)) }
        command.append(ttlArgument)
        let key = key(for: first)
        FunctionCall(client, replicaAcknowledgement, first, key: key, slot: HashSlot.of(key), request: command.take(), deadline: nil,
                     changed: nil, relay: nil, asked: nil, decode: { _, reply in
            guard case let .array(values) = reply, values.count == ids.count else { throw ChromeFunctionError.unexpectedReply(reply) }
            return try values.map { value in
                switch value {
                case .null: return .gone
                case let .bulk(text): return .tagged(String(decoding: text, as: UTF8.self))
                default: throw ChromeFunctionError.unexpectedReply(reply)
                }
            }
        }, completion: completion).send()
    }

    /// The library's commands that Redis would refuse this user (none: it
    /// may run them all), asked with the function library itself so that
    /// no right to `ACL DRYRUN` is needed. A library missing where the user
    /// may not load it comes back as the refusal it is ("Function not
    /// found"), as does a user who may not call it.
    public func refusedCommands(completion: @escaping Completion<[String]>) {
        let key = Array((keyPrefix + "{readiness}").utf8)
        var command = RESPRequestBuilder()
        command.append(Self.permittedCall)
        command.append(key)
        FunctionCall(client, nil, SessionID(high: 0, low: 0), key: key, slot: HashSlot.of(key), request: command.take(),
                     deadline: nil, changed: nil, relay: nil, asked: nil, decode: { _, reply in
            guard case let .array(values) = reply else { throw ChromeFunctionError.unexpectedReply(reply) }
            return values.compactMap(\.string)
        }, completion: completion).send()
    }

    /// Slides the session's expiry without reading it: a watched session is
    /// in use while nobody changes it. Completes with whether it exists, or
    /// nil when Redis did not answer.
    public func keepAlive(_ id: SessionID, completion: @escaping @Sendable (Bool?) -> Void) {
        let key = key(for: id)
        let command = idleTimeout == nil ? [Array("EXISTS".utf8), key] : [Array("PEXPIRE".utf8), key, ttlArgument]
        client.send(command, key: key, idempotent: true) { result in
            guard case let .success(.integer(found)) = result else { return completion(nil) }
            completion(found == 1)
        }
    }

    /// Errors of a Redis that takes no writes now but serves reads.
    static func refusesWrites(_ message: String) -> Bool {
        message.hasPrefix("MISCONF") || message.hasPrefix("NOREPLICAS") || message.hasPrefix("READONLY")
    }

    /// `SessionStore.apply` in one `FCALL`.
    public func apply(_ inputs: [ChromeInput], to id: SessionID, if condition: VersionCondition,
                      completion: @escaping Completion<AppliedInputs>) {
        applying(inputs, to: id, if: condition, completion: completion)
    }

    /// The same for one input (a scroll report usually comes alone), without an array for it.
    public func apply(_ input: ChromeInput, to id: SessionID, if condition: VersionCondition,
                      completion: @escaping Completion<AppliedInputs>) {
        applying(CollectionOfOne(input), to: id, if: condition, completion: completion)
    }

    private func applying(_ inputs: some Collection<ChromeInput> & Sendable, to id: SessionID, if condition: VersionCondition,
                          completion: @escaping Completion<AppliedInputs>) {
        call(Self.applyCall, id, completion, changed: Self.appliedAChange, relay: Self.appliedState, arguments: {
            [applySettings] command in
            command.append(applySettings)
            Self.append(condition, to: &command)
            for input in inputs { Self.append(input, to: &command) }
        }, decode: Self.applied)
    }

    /// What an `apply` that changed the session publishes.
    private static let appliedState: @Sendable (SessionID, RESPValue) -> [UInt8]? = { id, reply in
        guard appliedAChange(reply), let session = try? session(id, from: reply, status: "done") else { return nil }
        return message(session)
    }

    /// `SessionStore.remove` in one `FCALL`.
    public func remove(_ id: SessionID, if condition: VersionCondition, completion: @escaping Completion<StoreOutcome>) {
        call(Self.deleteCall, id, completion, changed: Self.isDone, relay: { _, reply in Self.isDone(reply) ? Self.gone : nil },
             arguments: { Self.append(condition, to: &$0) }) { id, reply in
            try Self.outcome(id, from: reply) ?? .notFound
        }
    }

    /// Reads a message of the session's channel. A non-finite inset (which
    /// the library never writes, but anyone may publish) is refused, as in
    /// a reply: watchers write the state as JSON, which has no NaN.
    /// What the library publishes for `session`'s state, as ``event(_:of:)`` reads it.
    static func message(_ session: Session) -> [UInt8] {
        let state = session.state
        var text = "\(EntityTag(version: state.version, tag: session.tag)) \(state.inset) \(state.isRevealed ? "1" : "0")"
        let behavior = behaviorWords(state)
        if let seq = state.lastAppliedSeq { text += " \(seq)" } else if behavior != nil { text += " -" }
        if let behavior { text += " " + behavior }
        return Array(text.utf8)
    }

    static let gone = Array("gone".utf8), spublish = Array("SPUBLISH".utf8)

    public static func event(_ message: [UInt8], of id: SessionID) -> SessionEvent? {
        if message == Array("gone".utf8) { return .removed(id) }
        let words = message.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
        let fields = words.map { String(decoding: $0, as: UTF8.self) }
        guard fields.count == 3 || fields.count == 4 || fields.count == 9, let etag = EntityTag(words[0]),
              let inset = Double(fields[1]), inset.isFinite, let revealed = revealed(fields[2])
        else { return nil }
        var seq: UInt64?
        if fields.count > 3, !(fields.count == 9 && fields[3] == "-") {
            guard let number = UInt64(fields[3]) else { return nil }
            seq = number
        }
        let plain = ChromeState(inset: inset, isRevealed: revealed, version: etag.version, lastAppliedSeq: seq)
        guard let state = fields.count == 9 ? withBehavior(fields[4...].joined(separator: " "), plain) : plain else { return nil }
        return .changed(Session(id: id, state: state, tag: etag.tag))
    }

    // MARK: Arguments

    static let fcall = Array("FCALL".utf8), fcallReadOnly = Array("FCALL_RO".utf8), oneKey = Array("1".utf8)
    private static let createFunction = Array("\(libraryName)_create".utf8), getFunction = Array("\(libraryName)_get".utf8)
    private static let readFunction = Array("\(libraryName)_read".utf8), watchedFunction = Array("\(libraryName)_watched".utf8)
    private static let applyFunction = Array("\(libraryName)_apply".utf8), deleteFunction = Array("\(libraryName)_delete".utf8)
    /// How each call begins (`FCALL function 1`), encoded once.
    private static let createCall = head(createFunction), getCall = head(getFunction), applyCall = head(applyFunction)
    private static let deleteCall = head(deleteFunction), readCall = EncodedArguments([fcallReadOnly, readFunction, oneKey])
    private static let permittedCall = head(Array("\(libraryName)_permitted".utf8))

    private static func head(_ function: [UInt8]) -> EncodedArguments {
        EncodedArguments([fcall, function, oneKey])
    }

    private static func ttlArgument(_ idleTimeout: Duration?) -> [UInt8] {
        guard let idleTimeout else { return Array("none".utf8) }
        let (seconds, attoseconds) = idleTimeout.components
        // Rounded up, as the memory store's idle clock rounds: never early.
        let milliseconds = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Array(String(max(1, milliseconds)).utf8)
    }

    /// Swift writes a double as the shortest text that reads back as it, and
    /// Lua's `tonumber` (strtod) reads it back exactly. Infinities and NaN
    /// come out as `inf`/`nan`, which the library refuses.
    static func text(_ number: Double) -> [UInt8] {
        Array(number.description.utf8)
    }

    static func text(_ number: UInt64) -> [UInt8] {
        Array(String(number).utf8)
    }

    /// The condition as the library reads it: a count, then a conjunction of
    /// `in n e…`, `notin n e…` and `never`, each `e` an entity tag's text,
    /// which the library compares as text.
    static func words(_ condition: VersionCondition) -> [[UInt8]] {
        var words: [[UInt8]] = []
        func add(_ condition: VersionCondition) {
            switch condition {
            case .always: break
            case .never: words.append(Array("never".utf8))
            case let .oneOf(tags): addSet("in", tags)
            case let .noneOf(tags): addSet("notin", tags)
            case let .all(conditions): conditions.forEach(add)
            }
        }
        func addSet(_ kind: String, _ tags: Set<EntityTag>) {
            words.append(Array(kind.utf8))
            words.append(text(UInt64(tags.count)))
            words.append(contentsOf: tags.map { Array($0.description.utf8) })
        }
        add(condition)
        return [text(UInt64(words.count))] + words
    }

    /// `words(condition)`, written without an array per word for the usual `.always`.
    static func append(_ condition: VersionCondition, to command: inout RESPRequestBuilder) {
        if case .always = condition {
            command.append(0 as UInt64)
            return
        }
        for word in words(condition) { command.append(word) }
    }
}
