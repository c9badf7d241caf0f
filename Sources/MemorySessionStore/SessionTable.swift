import TopChromeCore

/// One session as a shard keeps it: 56 bytes and no references, so a
/// million sessions cost about as much as the same table in C would and
/// the allocator and reference counting stay out of the way.
struct SessionSlot: Equatable {
    /// The id; 0/0 marks an empty slot (the store never puts that id in a slot).
    var high: UInt64
    var low: UInt64
    var inset: Double
    /// `version` in bits 0–39, `isRevealed` in bit 40, the last use in
    /// bits 41–63 (see ``IdleClock``): one word for what changes on every report.
    var packed: UInt64
    /// `lastAppliedSeq + 1` in bits 0–53 (0 for none), the behaviour in
    /// bits 54–55, `snap` in bit 56, whether a height was chosen in bit 57,
    /// whether `lastOffset` holds one in bit 58, and in bit 59 whether the
    /// session changed since the journal last took it (kept by `set`).
    var seqAndBehavior: UInt64
    /// The chosen collapsible height's bits above the tracked height offset's.
    var heights: UInt64
    /// `lastOffset`, when bit 58 of `seqAndBehavior` says there is one.
    var lastOffset: Double

    static let empty = SessionSlot(high: 0, low: 0, inset: 0, packed: 0, seqAndBehavior: 0, heights: 0, lastOffset: 0)

    static let versionBits = 40
    static let versionMask: UInt64 = (1 << versionBits) - 1
    static let revealedBit: UInt64 = 1 << versionBits
    static let lastUsedShift: UInt64 = UInt64(versionBits + 1)

    static let seqMask: UInt64 = (1 << 54) - 1
    static let behaviorShift: UInt64 = 54
    static let snapBit: UInt64 = 1 << 56
    static let chosenHeightBit: UInt64 = 1 << 57
    static let lastOffsetBit: UInt64 = 1 << 58
    static let changedBit: UInt64 = 1 << 59

    var isEmpty: Bool { high | low == 0 }

    /// Whether a slot can hold `state`: versions up to 2^40 − 1 (10^12 changes)
    /// and seqs below 2^54 − 1 (clients send at most 2^53 − 1). Anything
    /// else is kept aside by the store.
    static func fits(_ state: ChromeState) -> Bool {
        state.version <= versionMask && (state.lastAppliedSeq ?? 0) < seqMask
    }

    /// A slot for `state`, which must ``fits(_:)``, last used at `tick` (23 bits).
    init(id: SessionID, state: ChromeState, lastUsed tick: UInt64) {
        self.init(high: id.high, low: id.low, inset: 0, packed: 0, seqAndBehavior: 0, heights: 0, lastOffset: 0)
        set(state, lastUsed: tick)
    }

    init(high: UInt64, low: UInt64, inset: Double, packed: UInt64, seqAndBehavior: UInt64, heights: UInt64, lastOffset: Double) {
        self.high = high
        self.low = low
        self.inset = inset
        self.packed = packed
        self.seqAndBehavior = seqAndBehavior
        self.heights = heights
        self.lastOffset = lastOffset
    }

    var id: SessionID { SessionID(high: high, low: low) }

    var state: ChromeState {
        let seq = seqAndBehavior & Self.seqMask
        return ChromeState(
            inset: inset,
            isRevealed: packed & Self.revealedBit != 0,
            version: packed & Self.versionMask,
            lastAppliedSeq: seq == 0 ? nil : seq &- 1,
            behavior: Self.behavior(seqAndBehavior >> Self.behaviorShift & 3),
            snap: seqAndBehavior & Self.snapBit != 0,
            chosenCollapsibleHeight: seqAndBehavior & Self.chosenHeightBit != 0
                ? Float(bitPattern: UInt32(truncatingIfNeeded: heights >> 32)) : nil,
            trackedHeightOffset: Float(bitPattern: UInt32(truncatingIfNeeded: heights)),
            lastOffset: seqAndBehavior & Self.lastOffsetBit != 0 ? lastOffset : nil)
    }

    /// A behaviour's two bits.
    @inline(__always)
    static func bits(_ behavior: RevealBehavior) -> UInt64 {
        switch behavior {
        case .revealAtTop: 0
        case .pinned: 1
        case .enterAlways: 2
        case .exitUntilCollapsed: 3
        }
    }

    @inline(__always)
    static func behavior(_ bits: UInt64) -> RevealBehavior {
        switch bits {
        case 1: .pinned
        case 2: .enterAlways
        case 3: .exitUntilCollapsed
        default: .revealAtTop
        }
    }

    /// Marks the session changed; true if it was not yet (its id then goes
    /// on the shard's list of changed sessions, once per flush).
    @inline(__always)
    mutating func markChanged() -> Bool {
        defer { seqAndBehavior |= Self.changedBit }
        return seqAndBehavior & Self.changedBit == 0
    }

    /// Clears the mark: the journal has taken the session's state.
    mutating func clearChanged() {
        seqAndBehavior &= ~Self.changedBit
    }

    /// The last use, in the store's idle-clock ticks (23 bits).
    var lastUsed: UInt64 { packed >> Self.lastUsedShift }

    /// Marks the session used at `tick`, its state untouched.
    mutating func touch(at tick: UInt64) {
        packed = packed & ((1 << Self.lastUsedShift) - 1) | tick << Self.lastUsedShift
    }

    /// Stores `state`, which must ``fits(_:)``, last used at `tick`.
    mutating func set(_ state: ChromeState, lastUsed tick: UInt64) {
        inset = state.inset
        packed = state.version | (state.isRevealed ? Self.revealedBit : 0) | tick << Self.lastUsedShift
        var word = state.lastAppliedSeq.map { $0 &+ 1 } ?? 0
        word |= Self.bits(state.behavior) << Self.behaviorShift
        if state.snap { word |= Self.snapBit }
        if state.chosenCollapsibleHeight != nil { word |= Self.chosenHeightBit }
        if state.lastOffset != nil { word |= Self.lastOffsetBit }
        seqAndBehavior = word | seqAndBehavior & Self.changedBit
        heights = UInt64(state.chosenCollapsibleHeight?.bitPattern ?? 0) << 32 | UInt64(state.trackedHeightOffset.bitPattern)
        lastOffset = state.lastOffset ?? 0
    }
}

/// A hash table of ``SessionSlot``s keyed by id: open addressing with linear
/// probing, a power-of-two size and backward-shift deletion (no tombstones,
/// so lookups never wade through the dead). Ids are uniformly random, so a
/// slot's home is simply the low bits of `high` — no hashing. The store uses
/// the low bits of `low` to pick the shard, so the two never correlate.
///
/// Not thread-safe; each shard guards its own under a lock.
struct SessionTable: ~Copyable {
    /// Grows past this load: linear probing stays short (at this load 2.5
    /// probes expected for a hit, 8.5 for a miss) while a session costs
    /// 75–150 bytes of slots.
    static let maximumLoad = (numerator: 3, denominator: 4)
    static let minimumCapacity = 16

    private var slots: UnsafeMutablePointer<SessionSlot>
    /// A power of two, at least `minimumCapacity`.
    private(set) var capacity: Int
    private(set) var count = 0

    init(capacity: Int = SessionTable.minimumCapacity) {
        precondition(capacity >= Self.minimumCapacity && capacity & (capacity - 1) == 0,
                     "capacity must be a power of two, at least \(Self.minimumCapacity)")
        self.capacity = capacity
        slots = Self.allocate(capacity)
    }

    deinit {
        slots.deallocate()
    }

    private static func allocate(_ capacity: Int) -> UnsafeMutablePointer<SessionSlot> {
        let slots = UnsafeMutablePointer<SessionSlot>.allocate(capacity: capacity)
        slots.initialize(repeating: .empty, count: capacity)
        return slots
    }

    @inline(__always)
    private func home(of high: UInt64) -> Int {
        Int(truncatingIfNeeded: high) & (capacity - 1)
    }

    /// Where the slot with this id is, or nil. Never finds 0/0.
    @inline(__always)
    func index(high: UInt64, low: UInt64) -> Int? {
        let mask = capacity - 1
        var index = home(of: high)
        while true {
            let slot = slots[index]
            if slot.isEmpty { return nil }
            if slot.high == high && slot.low == low { return index }
            index = (index + 1) & mask
        }
    }

    /// The slot at `index`, read or changed in place. Changing its id is not allowed.
    subscript(index: Int) -> SessionSlot {
        unsafeAddress { UnsafePointer(slots + index) }
        nonmutating unsafeMutableAddress { slots + index }
    }

    /// Adds a slot whose id is not 0/0 and not in the table yet; returns where it went.
    @discardableResult
    mutating func insert(_ slot: SessionSlot) -> Int {
        precondition(!slot.isEmpty, "0/0 marks empty slots")
        if (count + 1) * Self.maximumLoad.denominator > capacity * Self.maximumLoad.numerator {
            resize(to: capacity * 2)
        }
        count += 1
        return place(slot)
    }

    /// Puts a slot into the first free place from its home on; there must be one.
    @discardableResult
    private func place(_ slot: SessionSlot) -> Int {
        let mask = capacity - 1
        var index = home(of: slot.high)
        while !slots[index].isEmpty {
            assert(slots[index].high != slot.high || slots[index].low != slot.low, "id already in the table")
            index = (index + 1) & mask
        }
        slots[index] = slot
        return index
    }

    /// Empties the slot at `index`, then moves later slots of its run back
    /// into the gap where their home allows, so every slot stays reachable
    /// from its home without gaps in between.
    mutating func remove(at index: Int) {
        precondition(!slots[index].isEmpty, "no slot at \(index)")
        let mask = capacity - 1
        var hole = index
        var next = (index + 1) & mask
        while !slots[next].isEmpty {
            // The slot at `next` may move into the hole if the hole lies on
            // its way from home to `next`, i.e. its home is not after the hole.
            if (next - home(of: slots[next].high)) & mask >= (next - hole) & mask {
                slots[hole] = slots[next]
                hole = next
            }
            next = (next + 1) & mask
        }
        slots[hole] = .empty
        count -= 1
    }

    /// Removes every slot for which `shouldRemove` is true; it is asked
    /// exactly once about each slot. Shrinks the table if it became sparse.
    mutating func removeAll(where shouldRemove: (SessionSlot) -> Bool) {
        if count > 0 {
            let mask = capacity - 1
            // Start right after an empty slot (there always is one): no run of
            // slots wraps around that point, and as deletion only moves slots
            // back within their run, onto places not yet visited, one pass sees
            // every slot once.
            var start = 0
            while !slots[start].isEmpty { start += 1 }
            for step in 1..<capacity {
                let index = (start + step) & mask
                while !slots[index].isEmpty && shouldRemove(slots[index]) {
                    remove(at: index)
                }
            }
        }
        shrinkIfSparse()
    }

    /// Halves the table (repeatedly) while at most an eighth is in use, so a
    /// store that once held many sessions gives the memory back. Not on
    /// every removal: growing and shrinking must not chase each other.
    private mutating func shrinkIfSparse() {
        var target = capacity
        while target > Self.minimumCapacity && count * 8 <= target {
            target /= 2
        }
        if target != capacity { resize(to: target) }
    }

    /// Every slot in use, in table order.
    func forEach(_ body: (SessionSlot) throws -> Void) rethrows {
        for index in 0..<capacity where !slots[index].isEmpty {
            try body(slots[index])
        }
    }

    private mutating func resize(to newCapacity: Int) {
        let old = slots
        let oldCapacity = capacity
        slots = Self.allocate(newCapacity)
        capacity = newCapacity
        for index in 0..<oldCapacity where !old[index].isEmpty {
            place(old[index])
        }
        old.deallocate()
    }
}
