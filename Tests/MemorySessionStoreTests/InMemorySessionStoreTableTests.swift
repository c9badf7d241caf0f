import Testing
@testable import MemorySessionStore
import TopChromeCore
import TopChromeTesting

/// The store over its compact table: states no slot can hold, the 23-bit
/// idle clock, restore and snapshot, and a run against a plain model.
@Suite struct InMemorySessionStoreTableTests {
    private let down = ChromeInput.scroll(ScrollReport(contentOffsetY: 400))
    private let top = ChromeInput.scroll(ScrollReport(contentOffsetY: 0))

    @Test func keepsStatesNoSlotCanHold() throws {
        let clock = ManualClock()
        let seen = Recorder()
        let store = InMemorySessionStore(idleTimeout: .seconds(60), now: { clock.now })
        let odd = [
            Session(id: SessionID(high: 0, low: 0), state: ChromeState(inset: 1, isRevealed: true, version: 3, lastAppliedSeq: nil), tag: store.epoch),
            Session(id: .random(), state: ChromeState(inset: 2, isRevealed: false, version: 1 << 40, lastAppliedSeq: 9), tag: store.epoch),
            Session(id: .random(), state: ChromeState(inset: 3, isRevealed: true, version: 5, lastAppliedSeq: .max), tag: store.epoch),
            Session(id: .random(), state: ChromeState(inset: 4, isRevealed: true, version: .max - 1, lastAppliedSeq: nil), tag: store.epoch),
        ]
        let plain = try store.create(inset: 0)
        try store.restore(odd)
        try seen.subscribe(to: [plain.id] + odd.map(\.id), in: store)
        #expect(store.count == 5)
        for session in odd { #expect(store.session(session.id) == session) }
        #expect(Set(store.snapshot()) == Set(odd + [plain]))

        let revealed = try #require(store.apply([top], to: odd[1].id))
        #expect(revealed.state.version == 1 << 40 + 1 && revealed.state.isRevealed)
        #expect(store.apply([down], to: odd[3].id)?.state == odd[3].state, "past the last version: no change")
        #expect(store.apply([.scroll(ScrollReport(contentOffsetY: 0, seq: 1))], to: odd[2].id)?.state.version == 5, "stale")
        #expect(store.remove(odd[0].id, if: .oneOf(store.tags(2))) == .conditionFailed(odd[0]))
        #expect(store.remove(odd[0].id))
        #expect(store.session(odd[0].id) == nil)
        #expect(store.count == 4)
        // Unwatched from here on: a watched session does not expire.
        for session in [plain] + odd { store.unsubscribe(seen, from: session.id) }

        clock.advance(by: .seconds(30))
        #expect(store.session(odd[1].id) != nil)
        clock.advance(by: .seconds(40))
        #expect(store.session(odd[2].id) == nil, "expires when touched")
        #expect(store.removeExpired() == 2, "the plain one and odd[3]")
        #expect(store.count == 1)
        #expect(seen.all.filter { if case .removed = $0 { true } else { false } }.count == 1, "the removal, heard while watched")
    }

    @Test func versionsPastFortyBitsMoveAsideAndOn() throws {
        let seen = Recorder()
        let store = InMemorySessionStore()
        let id = SessionID.random()
        let last = SessionSlot.versionMask
        try store.restore([Session(id: id, state: ChromeState(inset: 9, isRevealed: true, version: last, lastAppliedSeq: 41), tag: store.epoch)])
        try seen.subscribe(to: [id], in: store)
        #expect(store.apply([down, top, .setInset(10)], to: id)?.state == ChromeState(inset: 10, isRevealed: true, version: last + 3, lastAppliedSeq: 41))
        #expect(seen.recorded.map(\.version) == [last + 1, last + 2, last + 3])
        #expect(store.apply([down], to: id, if: .oneOf(store.tags(last + 3))) != .notFound)
        #expect(store.snapshot() == [Session(id: id, state: ChromeState(inset: 10, isRevealed: false, version: last + 4, lastAppliedSeq: 41), tag: store.epoch)])
        // Restored back into range: into a slot again.
        try store.restore([Session(id: id, state: ChromeState(inset: 1), tag: store.epoch)])
        #expect(store.session(id)?.state == ChromeState(inset: 1))
        #expect(store.count == 1)
    }

    @Test func theEmptyIdNamesNoSession() throws {
        let store = InMemorySessionStore()
        for _ in 0..<100 { _ = try store.create(inset: 0) }
        let none = SessionID(high: 0, low: 0)
        #expect(store.session(none) == nil)
        #expect(store.apply([.disappear], to: none) == nil)
        #expect(!store.remove(none))
        #expect(store.count == 100)
    }

    @Test func restoreReplacesAndCountsOnlyNewSessions() throws {
        let store = InMemorySessionStore(capacity: 3)
        let created = try store.create(inset: 0)
        let replaced = Session(id: created.id, state: ChromeState(inset: 7, isRevealed: false, version: 12, lastAppliedSeq: 3), tag: store.epoch)
        let added = Session(id: .random(), state: ChromeState(inset: 8), tag: store.epoch)
        try store.restore([replaced, added])
        #expect(store.count == 2)
        #expect(store.session(created.id) == replaced)
        #expect(Set(store.snapshot()) == [replaced, added])
    }

    @Test func manySessionsRoundTripThroughSnapshots() throws {
        let store = InMemorySessionStore(capacity: 20_000, shardCount: 4)
        var rng = SplitMix(seed: 5)
        var expected: Set<Session> = []
        for index in 0..<10_000 {
            let id = try store.create(inset: Double(index)).id
            let seq = UInt64.random(in: 0...1000, using: &rng)
            let session = try #require(store.apply([.scroll(ScrollReport(contentOffsetY: Double(index % 3) * 200, seq: seq))], to: id))
            expected.insert(session)
        }
        #expect(Set(store.snapshot()) == expected)
        let copy = InMemorySessionStore(capacity: 20_000, shardCount: 16)
        try copy.restore(store.snapshot())
        #expect(copy.count == 10_000)
        // The same states under the copy's epoch: a restart names them anew.
        let renamed = Set(expected.map { Session(id: $0.id, state: $0.state, tag: copy.epoch) })
        #expect(copy.epoch != store.epoch)
        #expect(Set(copy.snapshot()) == renamed)
        for session in renamed.prefix(500) { #expect(copy.session(session.id) == session) }
    }

    /// The idle clock counts on 23 bits; a session touched just before it wraps
    /// is neither dropped early nor kept forever just after.
    @Test func expiryAcrossTheClockWrapping() throws {
        let clock = ManualClock()
        let store = InMemorySessionStore(idleTimeout: .seconds(3600), now: { clock.now })
        // 2^23 ticks of 2^60 attoseconds: 9,671,406.6 s.
        clock.advance(by: .seconds(9_671_000))
        let id = try store.create(inset: 0).id
        let other = try store.create(inset: 0).id
        clock.advance(by: .seconds(1000))
        #expect(store.session(id) != nil)
        #expect(store.removeExpired() == 0)
        clock.advance(by: .seconds(3000))
        #expect(store.removeExpired() == 1, "idle for 4000 s")
        #expect(store.session(other) == nil)
        #expect(store.session(id) != nil, "idle for 3000 s")
        clock.advance(by: .seconds(3700))
        #expect(store.session(id) == nil)
    }

    @Test func timeoutsOfYearsWork() throws {
        let clock = ManualClock()
        let year = Duration.seconds(365 * 86_400)
        let store = InMemorySessionStore(idleTimeout: year * 10, now: { clock.now })
        let touched = try store.create(inset: 0).id
        let idle = try store.create(inset: 0).id
        clock.advance(by: year * 9)
        #expect(store.session(touched) != nil)
        #expect(store.removeExpired() == 0)
        clock.advance(by: year * 1 + .seconds(86_400))
        #expect(store.removeExpired() == 1)
        #expect(store.session(idle) == nil)
        #expect(store.session(touched) != nil)
    }

    @Test func negativeTimeoutDropsAtOnce() throws {
        let store = InMemorySessionStore(idleTimeout: .seconds(-1))
        let id = try store.create(inset: 0).id
        #expect(store.session(id) == nil)
        #expect(store.count == 0)
    }

    /// Random creates, reports (some with the largest seqs, moving sessions
    /// aside), conditional changes, removals and restores, against a model:
    /// a dictionary and the rules.
    @Test(arguments: [21, 22, 23] as [UInt64])
    func matchesAModel(seed: UInt64) throws {
        var rng = SplitMix(seed: seed)
        let rules = ChromeRules()
        let store = InMemorySessionStore(rules: rules, capacity: 100_000, idleTimeout: nil, shardCount: 2)
        var model: [SessionID: ChromeState] = [:]
        var ids: [SessionID] = []
        func randomInput() -> ChromeInput {
            switch Int.random(in: 0..<10, using: &rng) {
            case 0: .setInset(Double(Int.random(in: 0...3, using: &rng)))
            case 1: .disappear
            default:
                .scroll(ScrollReport(
                    contentOffsetY: Double(Int.random(in: 0...2, using: &rng)) * 300,
                    axis: Int.random(in: 0..<8, using: &rng) == 0 ? .horizontal : .vertical,
                    seq: [nil, UInt64.random(in: 0...50, using: &rng), .max - 1, .max].randomElement(using: &rng)!))
            }
        }
        for _ in 0..<20_000 {
            let known = ids.randomElement(using: &rng) ?? .random()
            let id = Int.random(in: 0..<20, using: &rng) == 0 ? SessionID.random() : known
            switch Int.random(in: 0..<100, using: &rng) {
            case 0..<10:
                let session = try store.create(inset: 5)
                model[session.id] = session.state
                ids.append(session.id)
            case 10..<70:
                let inputs = (0..<Int.random(in: 0...3, using: &rng)).map { _ in randomInput() }
                let condition: VersionCondition = Bool.random(using: &rng)
                    ? .always : .oneOf(store.tags(model[id]?.version ?? 1, UInt64.random(in: 1...5, using: &rng)))
                let outcome = store.apply(inputs, to: id, if: condition)
                guard let state = model[id] else {
                    #expect(outcome == .notFound)
                    continue
                }
                if condition.holds(for: EntityTag(version: state.version, tag: store.epoch)) {
                    var next = state, stale = 0
                    for input in inputs {
                        let step = rules.step(input, from: next)
                        next = step.state
                        if step.report == .stale { stale += 1 }
                    }
                    model[id] = next
                    #expect(outcome == .done(Session(id: id, state: next, tag: store.epoch), staleReports: stale))
                } else {
                    #expect(outcome == .conditionFailed(Session(id: id, state: state, tag: store.epoch)))
                }
            case 70..<80:
                let outcome = store.remove(id, if: .always)
                #expect(outcome == (model[id].map { StoreOutcome.done(Session(id: id, state: $0, tag: store.epoch)) } ?? .notFound))
                model[id] = nil
            case 80..<90:
                let version = Bool.random(using: &rng) ? UInt64.random(in: 1...9, using: &rng) : (1 << 40) - UInt64.random(in: 0...2, using: &rng)
                let state = ChromeState(inset: 1, isRevealed: Bool.random(using: &rng), version: version, lastAppliedSeq: nil)
                try store.restore([Session(id: id, state: state, tag: store.epoch)])
                if model[id] == nil { ids.append(id) }
                model[id] = state
            default:
                #expect(store.session(id) == model[id].map { Session(id: id, state: $0, tag: store.epoch) })
            }
        }
        #expect(store.count == model.count)
        #expect(Set(store.snapshot()) == Set(model.map { Session(id: $0.key, state: $0.value, tag: store.epoch) }))
    }
}
