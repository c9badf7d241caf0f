import Testing
@testable import MemorySessionStore
import TopChromeCore
import TopChromeTesting

/// A slot whose home in a 16-slot table is `home`; `tag` tells slots apart.
private func slot(home: UInt64, tag: UInt64, version: UInt64 = 1) -> SessionSlot {
    SessionSlot(id: SessionID(high: tag << 32 | home, low: tag), state: ChromeState(inset: Double(tag), isRevealed: true, version: version, lastAppliedSeq: nil), lastUsed: 0)
}

private func find(_ slot: SessionSlot, in table: borrowing SessionTable) -> Int? {
    table.index(high: slot.high, low: slot.low)
}

@Suite struct SessionTableTests {
    @Test func slotIsFiftySixBytes() {
        #expect(MemoryLayout<SessionSlot>.stride == 56)
    }

    @Test func slotKeepsWhatItIsGiven() {
        let states = [
            ChromeState(inset: 59.5, isRevealed: false, version: 7, lastAppliedSeq: 0),
            ChromeState(inset: -0.0, isRevealed: true, version: SessionSlot.versionMask, lastAppliedSeq: SessionSlot.seqMask - 1),
            ChromeState(inset: .infinity, isRevealed: false, version: 0, lastAppliedSeq: nil),
            ChromeState(inset: 80, isRevealed: false, version: 9, lastAppliedSeq: (1 << 53) - 1, behavior: .exitUntilCollapsed,
                        snap: true, chosenCollapsibleHeight: 56.3, trackedHeightOffset: -0.0, lastOffset: -1e300),
            ChromeState(inset: 80, isRevealed: true, version: 9, lastAppliedSeq: nil, behavior: .enterAlways,
                        chosenCollapsibleHeight: 0, trackedHeightOffset: -12.5, lastOffset: 0),
            ChromeState(inset: 80, isRevealed: true, version: 9, lastAppliedSeq: 3, behavior: .pinned),
        ]
        for state in states {
            #expect(SessionSlot.fits(state))
            let slot = SessionSlot(id: SessionID(high: 1, low: 2), state: state, lastUsed: IdleClock.mask)
            #expect(slot.state == state)
            #expect(slot.state.inset.sign == state.inset.sign)
            #expect(slot.state.trackedHeightOffset.sign == state.trackedHeightOffset.sign)
            #expect(slot.lastUsed == IdleClock.mask)
            #expect(slot.id == SessionID(high: 1, low: 2))
        }
        #expect(!SessionSlot.fits(ChromeState(inset: 0, isRevealed: true, version: SessionSlot.versionMask + 1, lastAppliedSeq: nil)))
        #expect(!SessionSlot.fits(ChromeState(inset: 0, isRevealed: true, version: 1, lastAppliedSeq: .max)))
        #expect(!SessionSlot.fits(ChromeState(inset: 0, isRevealed: true, version: 1, lastAppliedSeq: SessionSlot.seqMask)),
                "a seq past the slot's 54 bits is kept aside")
    }

    @Test func insertFindRemove() {
        var table = SessionTable()
        let a = slot(home: 3, tag: 1), b = slot(home: 9, tag: 2)
        let at = table.insert(a)
        table.insert(b)
        #expect(table.count == 2)
        #expect(find(a, in: table) == at)
        #expect(table[at] == a)
        #expect(find(b, in: table) != nil)
        #expect(find(slot(home: 3, tag: 3), in: table) == nil)
        table[at].inset = 42
        #expect(table[find(a, in: table)!].inset == 42)
        table.remove(at: at)
        #expect(find(a, in: table) == nil)
        #expect(find(b, in: table) != nil)
        #expect(table.count == 1)
    }

    @Test func neverFindsTheEmptyId() {
        var table = SessionTable()
        #expect(table.index(high: 0, low: 0) == nil)
        table.insert(slot(home: 0, tag: 1))
        #expect(table.index(high: 0, low: 0) == nil)
    }

    @Test func runsWrapAroundTheEnd() {
        var table = SessionTable()
        let slots = (1...3).map { slot(home: 15, tag: $0) }
        for slot in slots { table.insert(slot) }
        #expect(slots.map { find($0, in: table) } == [15, 0, 1])
        table.remove(at: 15)
        // The rest of the run moved back, across the end.
        #expect(find(slots[0], in: table) == nil)
        #expect(find(slots[1], in: table) == 15)
        #expect(find(slots[2], in: table) == 0)
        #expect(table[1].isEmpty)
    }

    @Test func backwardShiftMovesOnlyWhatMayMove() {
        var table = SessionTable()
        let a = slot(home: 3, tag: 1)  // at 3
        let b = slot(home: 3, tag: 2)  // at 4
        let c = slot(home: 5, tag: 3)  // at 5, home
        let d = slot(home: 4, tag: 4)  // at 6
        let e = slot(home: 7, tag: 5)  // at 7, home
        for slot in [a, b, c, d, e] { table.insert(slot) }
        #expect([a, b, c, d, e].map { find($0, in: table) } == [3, 4, 5, 6, 7])
        table.remove(at: 3)
        // b moves home; c must stay (the hole at 4 is before its home); d takes 4; e stays.
        #expect([b, c, d, e].map { find($0, in: table) } == [3, 5, 4, 7])
        #expect(table[6].isEmpty)
        #expect(table.count == 4)
    }

    @Test func growsKeepingEverySlot() {
        var table = SessionTable()
        #expect(table.capacity == 16)
        let slots = (1...100).map { slot(home: $0 % 16, tag: $0) }
        for slot in slots { table.insert(slot) }
        #expect(table.capacity == 256, "grows past a load of 3/4")
        #expect(table.count == 100)
        for slot in slots { #expect(table[find(slot, in: table)!] == slot) }
    }

    @Test func removeAllSeesEachSlotOnceAndShrinks() {
        var table = SessionTable()
        // Runs wrapping around the end of the table, and gaps.
        var rng = SplitMix(seed: 7)
        let slots = (1...600).map { _ in SessionSlot(id: SessionID(high: rng.next() | 1, low: rng.next()), state: ChromeState(), lastUsed: 0) }
        for slot in slots { table.insert(slot) }
        #expect(table.capacity == 1024)
        var asked: [SessionID: Int] = [:]
        table.removeAll { slot in
            asked[slot.id, default: 0] += 1
            return slot.low % 8 != 0
        }
        #expect(asked.count == slots.count && asked.values.allSatisfy { $0 == 1 })
        let kept = slots.filter { $0.low % 8 == 0 }
        #expect(table.count == kept.count)
        #expect(table.capacity < 1024, "a sparse table shrinks")
        #expect(table.capacity * 3 / 4 >= kept.count)
        for slot in kept { #expect(find(slot, in: table) != nil) }
        table.removeAll { _ in true }
        #expect(table.count == 0 && table.capacity == SessionTable.minimumCapacity)
    }

    /// Random inserts, updates, removals and sweeps against a Dictionary.
    /// Ids crowd into few homes, so runs are long and wrap around the end.
    @Test(arguments: [1, 2, 3, 4] as [UInt64])
    func matchesADictionary(seed: UInt64) {
        var rng = SplitMix(seed: seed)
        var table = SessionTable()
        var model: [SessionID: SessionSlot] = [:]
        var ids: [SessionID] = []
        var largest = 0
        func randomId() -> SessionID {
            let crowded = rng.next() & ~0xFFFF | UInt64.random(in: 0..<8, using: &rng) * 2047
            return SessionID(high: Bool.random(using: &rng) ? crowded : rng.next(), low: rng.next())
        }
        for step in 0..<20_000 {
            switch Int.random(in: 0..<1000, using: &rng) {
            case 0..<450:
                let id = randomId()
                let slot = SessionSlot(id: id, state: ChromeState(inset: Double(step)), lastUsed: UInt64(step) & IdleClock.mask)
                table.insert(slot)
                model[id] = slot
                ids.append(id)
            case 450..<700 where !ids.isEmpty:
                ids.swapAt(Int.random(in: 0..<ids.count, using: &rng), ids.count - 1)
                let id = ids.removeLast()
                table.remove(at: table.index(high: id.high, low: id.low)!)
                model[id] = nil
            case 700..<850 where !ids.isEmpty:
                let id = ids.randomElement(using: &rng)!
                let index = table.index(high: id.high, low: id.low)!
                table[index].inset += 1
                model[id]!.inset += 1
            case 850..<999:
                let id = Bool.random(using: &rng) ? randomId() : ids.randomElement(using: &rng) ?? randomId()
                #expect(table.index(high: id.high, low: id.low).map { table[$0] } == model[id])
            default:
                let modulus = UInt64.random(in: 2...9, using: &rng)
                table.removeAll { $0.low % modulus == 0 }
                model = model.filter { $0.key.low % modulus != 0 }
                ids = ids.filter { $0.low % modulus != 0 }
            }
            largest = max(largest, table.capacity)
        }
        #expect(largest >= 1024, "grew, with runs long enough to wrap")
        #expect(table.count == model.count)
        var seen: [SessionID: SessionSlot] = [:]
        table.forEach { seen[$0.id] = $0 }
        #expect(seen == model)
        for (id, slot) in model { #expect(table[table.index(high: id.high, low: id.low)!] == slot) }
    }
}
