import AccessTokens
#if canImport(Glibc)
import Glibc
#endif
import TopChromeCore

/// Verified access tokens, found again by their raw bytes as the request
/// carries them: an app reports with one token many times a second, and a
/// signature check costs more than the whole request. A lookup copies and
/// parses nothing; a token is found by a hash of its signature's last bytes
/// and its length, then compared whole, so a forged payload under a known
/// signature is never taken for the token it copies.
///
/// The table has a fixed number of slots, so memory stays bounded without
/// sweeps, and a token may sit only in the few slots after its hash's, so
/// crafted tokens with one hash cannot slow a lookup: a newcomer takes an
/// empty slot there, else the slot of the one that expires first.
struct RememberedTokens {
    /// A verified token with what a request's check reads, decided once.
    struct Grant {
        let access: AccessToken
        let session: SessionID?
    }

    private struct Slot {
        var hash: UInt64 = 0
        var bytes: [UInt8] = []
        var grant: Grant?
    }

    /// Slots a token may sit in, from the one its hash names.
    static let reach = 4

    private var slots: ContiguousArray<Slot>
    private let mask: Int
    private(set) var count = 0

    /// `capacity` is rounded up to a power of two, the slots a table holds.
    init(capacity: Int) {
        var size = Self.reach
        while size < capacity { size <<= 1 }
        slots = ContiguousArray(repeating: Slot(), count: size)
        mask = size - 1
    }

    func grant(for credentials: ArraySlice<UInt8>) -> Grant? {
        guard let index = credentials.withContiguousStorageIfAvailable({ find($0) }) ?? nil else { return nil }
        return slots[index].grant
    }

    /// One slot per hash: a second token with the same hash replaces the first.
    mutating func remember(_ grant: Grant, as credentials: ArraySlice<UInt8>) {
        // Its own copy: the request's buffer is reused by the connection's next request.
        let bytes = Array(credentials)
        let hash = bytes.withUnsafeBufferPointer { Self.hash($0) }
        var same: Int?, empty: Int?, soonest = 0, soonestExpiry = Int64.max
        for step in 0..<Self.reach {
            let index = (Int(truncatingIfNeeded: hash) &+ step) & mask
            guard let held = slots[index].grant else {
                if empty == nil { empty = index }
                continue
            }
            if slots[index].hash == hash { same = index; break }
            if held.access.expiresAt < soonestExpiry { soonest = index; soonestExpiry = held.access.expiresAt }
        }
        let index = same ?? empty ?? soonest
        if slots[index].grant == nil { count += 1 }
        slots[index] = Slot(hash: hash, bytes: bytes, grant: grant)
    }

    mutating func forget(_ credentials: ArraySlice<UInt8>) {
        guard let index = credentials.withContiguousStorageIfAvailable({ find($0) }) ?? nil else { return }
        slots[index] = Slot()
        count -= 1
    }

    mutating func removeAll() {
        for index in slots.indices where slots[index].grant != nil { slots[index] = Slot() }
        count = 0
    }

    private func find(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        let hash = Self.hash(bytes)
        for step in 0..<Self.reach {
            let index = (Int(truncatingIfNeeded: hash) &+ step) & mask
            guard slots[index].hash == hash, slots[index].grant != nil else { continue }
            let held = slots[index].bytes
            guard held.count == bytes.count else { return nil }
            let same = held.withUnsafeBufferPointer { memcmp($0.baseAddress!, bytes.baseAddress!, bytes.count) == 0 }
            return same ? index : nil
        }
        return nil
    }

    /// The last 16 bytes are the signature's (random to anyone without the
    /// key), mixed with the length; the whole token is compared on a hit.
    private static func hash(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
        var tail: (UInt64, UInt64) = (0, 0)
        let taken = min(bytes.count, 16)
        withUnsafeMutableBytes(of: &tail) { raw in
            guard taken > 0 else { return }
            raw.copyMemory(from: UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(bytes)[(bytes.count - taken)...]))
        }
        var mixed = UInt64(bytes.count) &* 0x9E37_79B9_7F4A_7C15
        mixed = (mixed ^ tail.0) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ tail.1) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }
}
