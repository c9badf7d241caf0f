import Foundation
import MemorySessionStore
import Redis
import RedisSessionStore
import RedisTestSupport
import Testing
import TopChromeCore
import TopChromeTesting

/// The rules have one meaning in two languages: random operations through
/// `TopChromeCore` (the memory store, ChromeRules) and through the Lua
/// library on a real Redis give the same outcomes, states (to the bit),
/// versions, report outcomes and stale counts. The vectors hold the cases
/// someone thought of; this looks for the ones nobody did.
///
/// Tags differ by design (one epoch in memory, a fresh tag per write in
/// Redis), so their structure is checked instead, and every condition is
/// built from the names each store gave its own session.
///
/// A failure names the seed and the operation; `TOPCHROME_DIFF_SEED=<seed>`
/// replays the run.
struct RulesDifferentialTests {
    static let operations = 10_000

    @Test func randomOperationsAgree() async throws {
        let seed = ProcessInfo.processInfo.environment["TOPCHROME_DIFF_SEED"].flatMap { UInt64($0) }
            ?? UInt64.random(in: 0...UInt64.max)
        var run = try DifferentialRun(seed: seed, backend: RedisBackend.single.get())
        let started = ContinuousClock.now
        do {
            try await run.run(Self.operations)
        } catch {
            Issue.record("Seed \(seed) (TOPCHROME_DIFF_SEED=\(seed) replays it), after \(run.performed) operations: \(error)")
            return
        }
        print("rules differential: seed \(seed), \(run.performed) operations in \(ContinuousClock.now - started)")
        // A run that never reached these compared less than it claims.
        let missing = DifferentialRun.Seen.allCases.filter { !run.seen.contains($0) }
        #expect(run.failed || missing.isEmpty, "seed \(seed): never saw \(missing)")
    }
}

/// What Redis answered to one operation.
private enum RedisAnswer: Sendable {
    case session(Session?)
    case applied(AppliedInputs)
    case removed(StoreOutcome)
}

/// A few sessions, each in both stores, and what the run knows of them.
struct DifferentialRun {
    enum Seen: CaseIterable {
        case done, conditionFailed, notFound, stale, horizontal, newVersion, atVersionCap, removed
        /// A fraction-driven chrome half way, and a behaviour changed.
        case partlyCollapsed, behaviorChanged
    }

    /// One session as both stores hold it.
    private struct Tracked {
        var id: SessionID
        /// The state both stores agreed on last; nil: none.
        var state: ChromeState?
        /// The tag Redis gave the current state.
        var redisTag: StateTag?
        /// The names the session had before, in each store, oldest first.
        var older: [(memory: EntityTag, redis: EntityTag)] = []
    }

    let seed: UInt64
    private(set) var performed = 0
    private(set) var seen: Set<Seen> = []
    private(set) var failed = false
    private var generator: DifferentialGenerator
    private var tracked: [Tracked]
    private let memory: InMemorySessionStore
    private let functions: ChromeFunctions
    private let client: RedisClient

    init(seed: UInt64, backend: RedisBackend) {
        self.seed = seed
        var rng = SplitMix(seed: seed)
        let threshold = [ChromeRules.defaultRevealThreshold, 0, 0.3].randomElement(using: &rng)!
        let rules = ChromeRules(revealThreshold: threshold)
        generator = DifferentialGenerator(rng: rng, threshold: threshold)
        tracked = (0..<24).map { _ in Tracked(id: SessionID(high: rng.next(), low: rng.next() | 1)) }
        // No expiry: idle expiry is tested elsewhere, and a slow machine must not make it happen here.
        memory = InMemorySessionStore(rules: rules, idleTimeout: nil, shardCount: 4)
        functions = ChromeFunctions(client: backend.client, keyPrefix: "differential:\(seed):", rules: rules, idleTimeout: nil)
        client = backend.client
    }

    /// Rounds of operations on distinct sessions: the memory store's in
    /// order, Redis's all at once (pipelined on one connection), then
    /// compared in order. Sessions are independent, so this is the same as
    /// one at a time, with a round trip per round instead of per operation.
    mutating func run(_ count: Int) async throws {
        while performed < count {
            let slots = Array(tracked.indices.shuffled(using: &generator.rng)
                .prefix(min(count - performed, Int.random(in: 1...16, using: &generator.rng))))
            var steps: [(slot: Int, operation: DifferentialOperation, memory: MemoryAnswer, id: SessionID)] = []
            for slot in slots {
                let operation = generator.operation()
                let answer = try perform(operation, slot: slot)
                steps.append((slot, operation, answer, answer.id ?? tracked[slot].id))
            }
            let requests = steps.map { step in
                (step.id, step.operation, redisCondition(step.operation, slot: step.slot))
            }
            let answers = try await withThrowingTaskGroup(of: (Int, RedisAnswer).self) { [functions, client] group in
                for (index, request) in requests.enumerated() {
                    group.addTask {
                        (index, try await Self.perform(request.1, on: request.0, if: request.2, functions, client))
                    }
                }
                var answers = [RedisAnswer?](repeating: nil, count: requests.count)
                for try await (index, answer) in group { answers[index] = answer }
                return answers.map { $0! }
            }
            for (step, answer) in zip(steps, answers) {
                performed += 1
                if let mismatch = compare(step.operation, slot: step.slot, id: step.id, step.memory, answer) {
                    let before = tracked[step.slot].state.map { "\(Exact($0))" } ?? "(no session)"
                    Issue.record("""
                        The stores disagree. Seed \(seed) (TOPCHROME_DIFF_SEED=\(seed) replays it), \
                        operation \(performed) of \(count), session \(step.slot) \(before), \
                        threshold \(generator.threshold): \(step.operation)
                        \(mismatch)
                        """)
                    failed = true
                    return
                }
            }
        }
    }

    // MARK: The memory store

    private struct MemoryAnswer {
        var outcome: StoreOutcome
        /// For an apply: what ChromeRules made of each report, from the state before.
        var reports: [ReportOutcome] = []
        /// For an apply: what the store's statistics counted (applied, horizontal, stale).
        var counted: [Int] = []
        var id: SessionID? { outcome.session?.id }
    }

    private mutating func perform(_ operation: DifferentialOperation, slot: Int) throws -> MemoryAnswer {
        let id = tracked[slot].id
        switch operation {
        case let .create(inset, settings):
            return MemoryAnswer(outcome: .done(try memory.create(inset: inset, settings: settings)))
        case let .restore(state):
            try memory.restore([Session(id: id, state: state, tag: memory.epoch)])
            return MemoryAnswer(outcome: memory.session(id).map { .done($0) } ?? .notFound)
        case .read:
            return MemoryAnswer(outcome: memory.session(id).map { .done($0) } ?? .notFound)
        case let .apply(inputs, condition):
            var reports: [ReportOutcome] = []
            if var state = tracked[slot].state {
                for input in inputs {
                    let step = memory.rules.step(input, from: state)
                    state = step.state
                    if let report = step.report { reports.append(report) }
                }
            }
            let statistics = memory.statistics
            let before = [statistics.reportsApplied, statistics.reportsIgnoredHorizontal, statistics.reportsIgnoredStale]
            let outcome = memory.apply(inputs, to: id, if: memoryCondition(condition, slot: slot))
            let after = [statistics.reportsApplied, statistics.reportsIgnoredHorizontal, statistics.reportsIgnoredStale]
            return MemoryAnswer(outcome: outcome, reports: reports, counted: zip(after, before).map { $0 - $1 })
        case let .remove(condition):
            return MemoryAnswer(outcome: memory.remove(id, if: memoryCondition(condition, slot: slot)))
        }
    }

    private func memoryCondition(_ condition: DifferentialCondition, slot: Int) -> VersionCondition {
        let session = tracked[slot]
        return condition.concrete(current: session.state.map { EntityTag(version: $0.version, tag: memory.epoch) },
                                  older: session.older.map(\.memory))
    }

    // MARK: Redis

    private func redisCondition(_ operation: DifferentialOperation, slot: Int) -> VersionCondition {
        let session = tracked[slot]
        let current = session.state.flatMap { state in session.redisTag.map { EntityTag(version: state.version, tag: $0) } }
        switch operation {
        case let .apply(_, condition), let .remove(condition):
            return condition.concrete(current: current, older: session.older.map(\.redis))
        case .create, .restore, .read:
            return .always
        }
    }

    /// The operation through ChromeFunctions; a restore writes the layout
    /// topchrome.lua documents, with a tag of its own, as a state file's restore would.
    private static func perform(_ operation: DifferentialOperation, on id: SessionID, if condition: VersionCondition,
                                _ functions: ChromeFunctions, _ client: RedisClient) async throws -> RedisAnswer {
        switch operation {
        case let .create(inset, settings):
            return .session(try await functions.create(id, inset: inset, settings: settings))
        case let .restore(state):
            let key = String(decoding: functions.key(for: id), as: UTF8.self)
            let etag = EntityTag(version: state.version, tag: .random())
            var fields = ["HSET", key, "i", state.inset.description, "r", state.isRevealed ? "1" : "0",
                          "v", "\(state.version)", "e", etag.description]
            if let seq = state.lastAppliedSeq { fields += ["s", "\(seq)"] }
            if state.behavior != .revealAtTop { fields += ["b", state.behavior.rawValue] }
            if state.snap { fields += ["n", "1"] }
            if let height = state.chosenCollapsibleHeight { fields += ["c", Double(height).description] }
            if state.trackedHeightOffset.bitPattern != 0 { fields += ["o", Double(state.trackedHeightOffset).description] }
            if let last = state.lastOffset { fields += ["l", last.description] }
            _ = try await client.send(["DEL", key])
            _ = try await client.send(fields)
            return .session(try await functions.session(id))
        case .read:
            return .session(try await functions.session(id))
        case let .apply(inputs, _):
            return .applied(try await functions.apply(inputs, to: id, if: condition))
        case .remove:
            return .removed(try await functions.remove(id, if: condition))
        }
    }

    // MARK: Comparing

    /// Nil if both stores did the same; else what differs. Updates what is
    /// known of the session when they agree.
    private mutating func compare(_ operation: DifferentialOperation, slot: Int, id: SessionID,
                                  _ memory: MemoryAnswer, _ redis: RedisAnswer) -> String? {
        let redisOutcome: StoreOutcome
        var redisReports: [ReportOutcome] = []
        switch redis {
        case let .session(session): redisOutcome = session.map { .done($0) } ?? .notFound
        case let .applied(applied): (redisOutcome, redisReports) = (applied.outcome, applied.reports)
        case let .removed(outcome): redisOutcome = outcome
        }
        let memoryText = "memory store: \(Self.describe(memory.outcome))", redisText = "Redis: \(Self.describe(redisOutcome))"
        guard ExactOutcome(memory.outcome) == ExactOutcome(redisOutcome) else { return "\(memoryText)\n\(redisText)" }
        guard memory.outcome.staleReports == redisOutcome.staleReports else { return "stale reports: \(memoryText)\n\(redisText)" }
        if case .apply = operation, case .done = redisOutcome {
            guard redisReports == memory.reports else { return "reports: ChromeRules \(memory.reports), Redis \(redisReports)" }
            let counts = [ReportOutcome.applied, .horizontal, .stale].map { kind in redisReports.count { $0 == kind } }
            guard counts == memory.counted else { return "the memory store's statistics counted \(memory.counted), Redis \(counts)" }
        }
        if let session = memory.outcome.session, session.tag != self.memory.epoch {
            return "the memory store named a state with \(Self.hex(session.tag)), not its epoch"
        }
        if let mismatch = checkTags(operation, slot: slot, redisOutcome) { return mismatch }
        record(operation, slot: slot, id: id, memory.outcome, redisOutcome)
        return nil
    }

    /// A new version in Redis has a new tag; anything else keeps the tag it had.
    private func checkTags(_ operation: DifferentialOperation, slot: Int, _ outcome: StoreOutcome) -> String? {
        guard let session = outcome.session, let before = tracked[slot].state, let tag = tracked[slot].redisTag else { return nil }
        switch operation {
        case .create, .restore: return nil
        case .read, .remove, .apply:
            let renamed = session.state.version != before.version
            if renamed == (session.tag == tag) {
                return "Redis tag \(Self.hex(session.tag)) for v\(session.state.version), was \(Self.hex(tag)) for v\(before.version)"
            }
            return nil
        }
    }

    private mutating func record(_ operation: DifferentialOperation, slot: Int, id: SessionID,
                                 _ memory: StoreOutcome, _ redis: StoreOutcome) {
        var session = tracked[slot]
        session.id = id
        switch (operation, memory) {
        case (.create, _), (.restore, _):
            // A state put in place may reuse a version the session had: its old names are no use.
            session.older = []
        case (.remove, .done):
            seen.insert(.removed)
            session.older = []
        default:
            if let old = session.state, let tag = session.redisTag, let now = memory.session?.state, now.version != old.version {
                session.older.append((EntityTag(version: old.version, tag: self.memory.epoch), EntityTag(version: old.version, tag: tag)))
                seen.insert(.newVersion)
            }
        }
        let removed = if case .remove = operation, case .done = memory { true } else { false }
        session.state = removed ? nil : memory.session?.state
        session.redisTag = removed ? nil : redis.session?.tag
        tracked[slot] = session
        switch memory {
        case let .done(_, stale):
            seen.insert(.done)
            if stale > 0 { seen.insert(.stale) }
        case .conditionFailed: seen.insert(.conditionFailed)
        case .notFound: seen.insert(.notFound)
        }
        if case let .apply(inputs, _) = operation, case .done = memory,
           inputs.contains(where: { if case let .scroll(report) = $0 { report.axis == .horizontal } else { false } }) {
            seen.insert(.horizontal)
        }
        if memory.session?.state.version == ChromeState.allowedVersions.upperBound { seen.insert(.atVersionCap) }
        if let fraction = memory.session?.state.collapsedFraction, fraction > 0, fraction < 1 { seen.insert(.partlyCollapsed) }
        if case let .apply(inputs, _) = operation, case .done = memory,
           inputs.contains(where: { if case .setBehavior = $0 { true } else { false } }) {
            seen.insert(.behaviorChanged)
        }
    }

    private static func hex(_ tag: StateTag) -> String { String(decoding: tag.hex, as: UTF8.self) }

    private static func describe(_ outcome: StoreOutcome) -> String {
        switch outcome {
        case let .done(session, stale): "done \(Exact(session.state)) tag \(hex(session.tag)), \(stale) stale"
        case let .conditionFailed(session): "condition failed \(Exact(session.state)) tag \(hex(session.tag))"
        case .notFound: "not found"
        }
    }
}

extension StoreOutcome {
    var staleReports: Int {
        if case let .done(_, stale) = self { return stale }
        return 0
    }
}
