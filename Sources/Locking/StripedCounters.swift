#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Synchronization

/// Counters that every request adds to, kept as a few copies (stripes) that
/// are summed when read. Threads adding to one shared counter would pass its
/// cache line back and forth on every request; each thread adds to its own
/// stripe instead.
public final class StripedCounters: @unchecked Sendable {  // every access is atomic
    /// A power of two. Threads are told apart by a hash of their id, so two
    /// may share a stripe; they then only lose the gain.
    @inlinable static var stripeCount: Int { 8 }
    /// Stripes start on their own cache lines (128 bytes: adjacent-line prefetch pairs lines).
    private static let stripeAlignment = 128
    @usableFromInline let count: Int
    /// Counters per stripe, rounded up to whole stripe alignments.
    @usableFromInline let stride: Int
    @usableFromInline let storage: UnsafeMutablePointer<Atomic<Int>>

    public init(count: Int) {
        self.count = count
        let perAlignment = Self.stripeAlignment / MemoryLayout<Atomic<Int>>.stride
        stride = (count + perAlignment - 1) / perAlignment * perAlignment
        storage = UnsafeMutableRawPointer
            .allocate(byteCount: Self.stripeCount * stride * MemoryLayout<Atomic<Int>>.stride, alignment: Self.stripeAlignment)
            .bindMemory(to: Atomic<Int>.self, capacity: Self.stripeCount * stride)
        for index in 0..<(Self.stripeCount * stride) {
            (storage + index).initialize(to: Atomic(0))
        }
    }

    deinit {
        storage.deinitialize(count: Self.stripeCount * stride)
        storage.deallocate()
    }

    /// Inlined into the caller: every request adds to a few counters, and a call across modules costs more than the add.
    @inlinable @inline(__always)
    public func add(_ amount: Int, at index: Int) {
        precondition(index >= 0 && index < count, "no such counter")
        storage[Self.currentStripe() * stride + index].wrappingAdd(amount, ordering: .relaxed)
    }

    /// The counter's total over all stripes.
    public func value(at index: Int) -> Int {
        precondition(index >= 0 && index < count, "no such counter")
        var total = 0
        for stripe in 0..<Self.stripeCount {
            total &+= storage[stripe * stride + index].load(ordering: .relaxed)
        }
        return total
    }

    /// The calling thread's stripe.
    @inlinable @inline(__always)
    static func currentStripe() -> Int {
        threadSlot(among: stripeCount)
    }
}

/// The calling thread's place among `count` (a power of two) per-thread
/// places: its id, hashed (ids are addresses, far apart and aligned).
@inlinable @inline(__always)
public func threadSlot(among count: Int) -> Int {
    Int(truncatingIfNeeded: (UInt64(pthread_self()) &* 0x9E37_79B9_7F4A_7C15) >> 32) & (count - 1)
}
