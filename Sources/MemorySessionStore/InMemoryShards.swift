#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import SessionWatching
import TopChromeCore

// The memory store's shards: each a lock and the sessions it guards.

/// Where a session is in its shard.
enum Place {
    case slot(Int)
    /// In ``ShardSessions/aside``.
    case aside
}

/// A session whose state no slot can hold (see ``SessionSlot/fits(_:)``).
struct AsideEntry {
    var state: ChromeState
    var lastUsed: UInt64
}

/// One shard's sessions: nearly all in the table, the odd one aside.
struct ShardSessions: ~Copyable {
    var table = SessionTable()
    /// Sessions no slot can hold: normally none, so a miss in the table
    /// costs one check more and a hit nothing.
    var aside: [SessionID: AsideEntry] = [:]
    /// Changes of these sessions that watchers are yet to hear of: told
    /// after the lock is released, never under it.
    var outbox = ChangeOutbox()
    /// Sessions changed or removed since the journal last took them; a
    /// session in a slot is listed once (its slot's mark says it is).
    var changed: [SessionID] = []

    @inline(__always)
    func place(of id: SessionID) -> Place? {
        if let index = table.index(high: id.high, low: id.low) { return .slot(index) }
        if aside.isEmpty || aside[id] == nil { return nil }
        return .aside
    }

    @inline(__always)
    func state(at place: Place, _ id: SessionID) -> ChromeState {
        switch place {
        case let .slot(index): table[index].state
        case .aside: aside[id]!.state
        }
    }

    @inline(__always)
    func lastUsed(at place: Place, _ id: SessionID) -> UInt64 {
        switch place {
        case let .slot(index): table[index].lastUsed
        case .aside: aside[id]!.lastUsed
        }
    }

    /// Changes the session at `place`, moving it between table and aside if it must.
    /// With `noting`, also lists it as changed for the journal.
    @inline(__always)
    mutating func set(_ state: ChromeState, lastUsed tick: UInt64, at place: Place, _ id: SessionID, noting: Bool = false) {
        if case let .slot(index) = place, SessionSlot.fits(state) {
            table[index].set(state, lastUsed: tick)
            if noting, table[index].markChanged() { changed.append(id) }
        } else {
            remove(at: place, id)
            insert(id, state, lastUsed: tick)
            if noting { noteMoved(id) }
        }
    }

    /// A session that moved between table and aside: listed again (the
    /// taker skips the second listing of a slot).
    private mutating func noteMoved(_ id: SessionID) {
        if let index = table.index(high: id.high, low: id.low) { _ = table[index].markChanged() }
        changed.append(id)
    }

    /// Marks the session at `place` used at `tick`: a read keeps it alive.
    @inline(__always)
    mutating func touch(at place: Place, _ id: SessionID, lastUsed tick: UInt64) {
        switch place {
        case let .slot(index): table[index].touch(at: tick)
        case .aside: aside[id]!.lastUsed = tick
        }
    }

    /// The changed sessions' states now (nil for one removed since),
    /// each once, their marks cleared.
    mutating func takeChanged(into records: inout [(id: SessionID, state: ChromeState?)]) {
        guard !changed.isEmpty else { return }
        var seen = Set<SessionID>(minimumCapacity: aside.isEmpty ? 0 : changed.count)
        for id in changed {
            if !aside.isEmpty, !seen.insert(id).inserted { continue }
            switch place(of: id) {
            case let .slot(index)?:
                guard table[index].seqAndBehavior & SessionSlot.changedBit != 0 else { continue }
                table[index].clearChanged()
                records.append((id, table[index].state))
            case .aside?: records.append((id, aside[id]!.state))
            case nil: records.append((id, nil))
            }
        }
        changed.removeAll(keepingCapacity: changed.count < 4096)
    }

    /// Adds a session that is not here yet.
    mutating func insert(_ id: SessionID, _ state: ChromeState, lastUsed tick: UInt64) {
        if id.high | id.low != 0 && SessionSlot.fits(state) {
            table.insert(SessionSlot(id: id, state: state, lastUsed: tick))
        } else {
            aside[id] = AsideEntry(state: state, lastUsed: tick)
        }
    }

    mutating func remove(at place: Place, _ id: SessionID) {
        switch place {
        case let .slot(index): table.remove(at: index)
        case .aside: aside[id] = nil
        }
    }
}

/// The shards, in one allocation freed with them: a shard
/// object would be retained and released on every call and its sessions
/// checked for exclusive access, which together cost as much as the rest of
/// applying a report. Shards lie 128 bytes apart so threads on different
/// shards do not share cache lines. Sendable because a shard's sessions are
/// only ever touched under its mutex.
struct Shards: ~Copyable, @unchecked Sendable {
    private static let sessionsOffset = roundUp(MemoryLayout<pthread_mutex_t>.size, to: 64)
    fileprivate static let stride = roundUp(sessionsOffset + MemoryLayout<ShardSessions>.size, to: 128)

    private let base: UnsafeMutableRawPointer
    /// A power of two.
    let count: Int

    init(count: Int) {
        self.count = count
        base = UnsafeMutableRawPointer.allocate(byteCount: count * Self.stride, alignment: 128)
        for index in 0..<count {
            let shard = base + index * Self.stride
            let mutex = shard.bindMemory(to: pthread_mutex_t.self, capacity: 1)
            mutex.initialize(to: pthread_mutex_t())
            precondition(pthread_mutex_init(mutex, nil) == 0, "pthread_mutex_init failed")
            (shard + Self.sessionsOffset).bindMemory(to: ShardSessions.self, capacity: 1).initialize(to: ShardSessions())
        }
    }

    deinit {
        for index in 0..<count {
            let shard = self[index]
            shard.sessions.deinitialize(count: 1)
            pthread_mutex_destroy(shard.mutex)
        }
        base.deallocate()
    }

    @inline(__always)
    subscript(index: Int) -> Shard {
        let shard = base + index * Self.stride
        return Shard(
            mutex: shard.assumingMemoryBound(to: pthread_mutex_t.self),
            sessions: (shard + Self.sessionsOffset).assumingMemoryBound(to: ShardSessions.self))
    }

    private static func roundUp(_ size: Int, to alignment: Int) -> Int {
        (size + alignment - 1) / alignment * alignment
    }
}

/// One lock and the sessions it guards. A pthread mutex, as `NSLock` uses
/// inside, rather than `Mutex`: the thread sanitizer reports false races on
/// `Mutex` with this toolchain.
struct Shard {
    let mutex: UnsafeMutablePointer<pthread_mutex_t>
    let sessions: UnsafeMutablePointer<ShardSessions>

    @inline(__always)
    func withLock<Result>(_ body: (inout ShardSessions) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&sessions.pointee)
    }
}
