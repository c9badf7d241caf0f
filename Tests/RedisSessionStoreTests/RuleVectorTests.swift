import Foundation
import MemorySessionStore
import Redis
import RedisSessionStore
import RedisTestSupport
import Synchronization
import Testing
import TopChromeCore

/// Every shared vector, against ChromeRules, the memory store, the Lua
/// library on one Redis and on a 3-primary cluster: the same outcome, state
/// (to the bit: negative zero keeps its sign), events, and expiry sliding
/// (or not) in each. Tags are each store's own: the memory store's epoch on
/// every state; in Redis the starting state's until a version is made, then
/// one fresh tag for the call's new versions.
struct RuleVectorTests {
    @Test(arguments: ruleVectors + behaviorRuleVectors)
    func everyStoreAgrees(_ vector: RuleVector) async throws {
        checkRules(vector)
        try checkMemoryStore(vector)
        try await checkRedis(vector, on: RedisBackend.single.get())
        try await checkRedis(vector, on: RedisBackend.cluster.get())
    }

    /// The rules alone, one input at a time: the vector is what they say.
    private func checkRules(_ vector: RuleVector) {
        guard case let .apply(inputs, condition) = vector.request, let start = vector.start else { return }
        let rules = ChromeRules(revealThreshold: vector.threshold)
        var state = start
        var reports: [ReportOutcome] = []
        var events: [ChromeState] = []
        for input in inputs {
            let (next, report) = rules.step(input, from: state)
            if let report { reports.append(report) }
            if next.version != state.version { events.append(next) }
            state = next
        }
        switch vector.expected {
        case let .applied(expected, expectedReports, expectedEvents):
            #expect(condition.holds(for: EntityTag(version: start.version, tag: RuleVector.startTag)))
            #expect(Exact(state) == Exact(expected))
            #expect(reports == expectedReports)
            #expect(events.map(Exact.init) == expectedEvents.map(Exact.init))
        case .conditionFailed:
            #expect(!condition.holds(for: EntityTag(version: start.version, tag: RuleVector.startTag)))
        case .removed, .notFound:
            Issue.record("an apply vector expects \(vector.expected)")
        }
    }

    private func checkMemoryStore(_ vector: RuleVector) throws {
        // Twice: watched, for the events; unwatched, for the expiry (a
        // watched session does not expire, and the watcher leaving is a use).
        for watched in [true, false] {
            let clock = Atomic<Int64>(0)
            let store = InMemorySessionStore(
                rules: ChromeRules(revealThreshold: vector.threshold), idleTimeout: .seconds(100),
                now: { .seconds(clock.load(ordering: .relaxed)) }, epoch: RuleVector.startTag)
            let id = SessionID.random()
            let recorder = Recorder()
            if let start = vector.start {
                try store.restore([Session(id: id, state: start, tag: RuleVector.startTag)])
                if watched { _ = try store.subscribe(recorder, to: id) }
            }
            clock.store(60, ordering: .relaxed)
            let outcome = switch vector.request {
            case let .apply(inputs, condition): store.apply(inputs, to: id, if: condition)
            case let .remove(condition): store.remove(id, if: condition)
            }
            #expect(ExactOutcome(outcome) == expectedOutcome(vector, id), "memory store")
            #expect(outcome.session.map { $0.tag == store.epoch } != false, "memory store: its epoch")
            if watched {
                #expect(recorder.events == expectedEvents(vector, id), "memory store")
                #expect(recorder.tags.allSatisfy { $0 == store.epoch }, "memory store: its epoch")
            } else {
                // Restored at 0 s, used at 60 s, idle for 100 s: alive at 130 s only if that use counted.
                clock.store(130, ordering: .relaxed)
                #expect((store.session(id) != nil) == slides(vector), "memory store expiry")
            }
        }
    }

    private func checkRedis(_ vector: RuleVector, on backend: RedisBackend) async throws {
        let functions = ChromeFunctions(
            client: backend.client, keyPrefix: "vectors:", rules: ChromeRules(revealThreshold: vector.threshold),
            idleTimeout: .seconds(1000))
        let id = SessionID.random()
        let key = String(decoding: functions.key(for: id), as: UTF8.self)
        let channel = String(decoding: functions.channel(for: id), as: UTF8.self)
        if let start = vector.start {
            // The layout topchrome.lua documents, written as a state file would be restored.
            let tag = String(decoding: RuleVector.startTag.hex, as: UTF8.self)
            var fields = ["HSET", key, "i", "\(start.inset)", "r", start.isRevealed ? "1" : "0", "v", "\(start.version)",
                          "e", "\(start.version).\(tag)"]
            if let seq = start.lastAppliedSeq { fields += ["s", "\(seq)"] }
            if start.behavior != .revealAtTop { fields += ["b", start.behavior.rawValue] }
            if start.snap { fields += ["n", "1"] }
            if let height = start.chosenCollapsibleHeight { fields += ["c", Double(height).description] }
            if start.trackedHeightOffset.bitPattern != 0 { fields += ["o", Double(start.trackedHeightOffset).description] }
            if let last = start.lastOffset { fields += ["l", last.description] }
            _ = try await backend.client.send(fields)
            #expect(try await backend.client.send(["PEXPIRE", key, "300000"]) == .integer(1))
        }
        let subscriber = try ShardedSubscriber(node: try backend.node(for: key), channel: Array(channel.utf8))
        let outcome: StoreOutcome
        switch vector.request {
        case let .apply(inputs, condition):
            let applied = try await functions.apply(inputs, to: id, if: condition)
            outcome = applied.outcome
            if case let .applied(_, reports, _) = vector.expected {
                #expect(applied.reports == reports, "\(backend.name)")
            }
        case let .remove(condition):
            outcome = try await functions.remove(id, if: condition)
        }
        #expect(ExactOutcome(outcome) == expectedOutcome(vector, id), "\(backend.name)")
        _ = try await backend.client.send(["SPUBLISH", channel, "end"])
        let messages = try subscriber.messages(until: Array("end".utf8)).map { ChromeFunctions.event($0, of: id) }
        #expect(messages.map { $0.map(ExactEvent.init) } == expectedEvents(vector, id).map(Optional.some), "\(backend.name)")
        // The starting state keeps its tag; the call's new versions share a fresh one.
        if let session = outcome.session, let start = vector.start {
            #expect((session.tag == RuleVector.startTag) == (session.state.version == start.version), "\(backend.name): tag")
            for case let .changed(changed)? in messages { #expect(changed.tag == session.tag, "\(backend.name): one tag per call") }
        }
        // Seeded to expire in 300 s (room for a stalled test process); a use sets 1000 s.
        guard case let .integer(ttl) = try await backend.client.send(["PTTL", key]) else {
            Issue.record("PTTL is an integer")
            return
        }
        switch vector.expected {
        case .applied: #expect(ttl > 300_000, "\(backend.name): a use slides the expiry")
        case .conditionFailed: #expect((1...300_000).contains(ttl), "\(backend.name): a refused change is no use")
        case .removed, .notFound: #expect(ttl == -2, "\(backend.name): no key")
        }
        // And the state stored is the one returned.
        let stored = try await functions.session(id)
        if case let .done(session, _) = outcome, case .applied = vector.expected {
            #expect(stored.map { Exact($0.state) } == Exact(session.state), "\(backend.name)")
            #expect(stored?.tag == session.tag, "\(backend.name): the tag stored is the one returned")
        }
    }

    private func expectedOutcome(_ vector: RuleVector, _ id: SessionID) -> ExactOutcome {
        switch vector.expected {
        case let .applied(state, _, _): .done(id, Exact(state))
        case .removed: .done(id, Exact(vector.start!))
        case .conditionFailed: .conditionFailed(id, Exact(vector.start!))
        case .notFound: ExactOutcome(.notFound)
        }
    }

    private func expectedEvents(_ vector: RuleVector, _ id: SessionID) -> [ExactEvent] {
        switch vector.expected {
        case let .applied(_, _, events): events.map { .changed(id, Exact($0)) }
        case .removed: [ExactEvent(.removed(id))]
        case .conditionFailed, .notFound: []
        }
    }

    private func slides(_ vector: RuleVector) -> Bool {
        if case .applied = vector.expected { return true }
        return false
    }
}

/// A state compared to the bit: `==` on doubles takes -0 for 0.
struct Exact: Hashable, CustomStringConvertible {
    let insetBits: UInt64
    let isRevealed: Bool
    let version: UInt64
    let seq: UInt64?
    let behavior: RevealBehavior
    let snap: Bool
    let chosenHeightBits: UInt32?
    let trackedBits: UInt32
    let lastOffsetBits: UInt64?

    init(_ state: ChromeState) {
        insetBits = state.inset.bitPattern
        isRevealed = state.isRevealed
        version = state.version
        seq = state.lastAppliedSeq
        behavior = state.behavior
        snap = state.snap
        chosenHeightBits = state.chosenCollapsibleHeight?.bitPattern
        trackedBits = state.trackedHeightOffset.bitPattern
        lastOffsetBits = state.lastOffset?.bitPattern
    }

    var description: String {
        var text = "(inset \(Double(bitPattern: insetBits)), \(isRevealed ? "revealed" : "hidden"), v\(version), seq \(seq.map(String.init) ?? "none")"
        if behavior != .revealAtTop || snap || chosenHeightBits != nil || trackedBits != 0 || lastOffsetBits != nil {
            text += ", \(behavior)\(snap ? " snapping" : ""), height \(chosenHeightBits.map { "\(Float(bitPattern: $0))" } ?? "inset")"
                + ", tracked \(Float(bitPattern: trackedBits)), last \(lastOffsetBits.map { "\(Double(bitPattern: $0))" } ?? "none")"
        }
        return text + ")"
    }
}

enum ExactOutcome: Hashable {
    case done(SessionID, Exact)
    case conditionFailed(SessionID, Exact)
    case notFound

    init(_ outcome: StoreOutcome) {
        switch outcome {
        case let .done(session, _): self = .done(session.id, Exact(session.state))
        case let .conditionFailed(session): self = .conditionFailed(session.id, Exact(session.state))
        case .notFound: self = .notFound
        }
    }
}

extension StoreOutcome {
    var session: Session? {
        switch self {
        case let .done(session, _), let .conditionFailed(session): session
        case .notFound: nil
        }
    }
}

enum ExactEvent: Hashable {
    case changed(SessionID, Exact)
    case removed(SessionID)

    init(_ event: SessionEvent) {
        switch event {
        case let .changed(session): self = .changed(session.id, Exact(session.state))
        case let .removed(id): self = .removed(id)
        }
    }
}

/// What the memory store's subscription delivered.
final class Recorder: SessionSubscriber, @unchecked Sendable {
    private let lock = NSLock()
    private var received: [ExactEvent] = []
    private var receivedTags: [StateTag] = []

    var events: [ExactEvent] { lock.withLock { received } }
    var tags: [StateTag] { lock.withLock { receivedTags } }

    func sessionChanged(_ change: SessionChange) -> Bool {
        lock.withLock {
            received.append(ExactEvent(.changed(change.session)))
            receivedTags.append(change.session.tag)
        }
        return true
    }

    func sessionRemoved(_ id: SessionID) {
        lock.withLock { received.append(ExactEvent(.removed(id))) }
    }
}

/// A Redis with the library loaded, and a client for it: one server, or
/// the 3-primary cluster; started once per test run.
final class RedisBackend: Sendable {
    let name: String
    let client: RedisClient
    private let cluster: RedisClusterFixture?
    private let server: RedisServer?

    static let single = Result { () throws -> RedisBackend in
        let server = try RedisServer()
        return RedisBackend(name: "one Redis", seeds: [server.node], server: server, cluster: nil)
    }

    static let cluster = Result { () throws -> RedisBackend in
        let cluster = try RedisClusterFixture.primariesOnly()
        return RedisBackend(name: "cluster", seeds: cluster.seeds, server: nil, cluster: cluster)
    }

    private init(name: String, seeds: [RedisNode], server: RedisServer?, cluster: RedisClusterFixture?) {
        var configuration = RedisConfiguration()
        configuration.setupCommands = [ChromeFunctions.loadCommand]
        self.name = name
        self.server = server
        self.cluster = cluster
        client = RedisClient(seeds: seeds, configuration: configuration)
    }

    /// The node serving `key`'s slot, where its channel can be subscribed to.
    func node(for key: String) throws -> RedisNode {
        if let server { return server.node }
        return try cluster!.primary(of: HashSlot.of(key)).node
    }
}
