#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Synchronization

/// Counters that every request adds to, kept as a few copies (stripes) that
/// are summed when read. Threads adding to one shared counter would pass its
/// cache line back and forth on every request; each thread adds to its own
/// stripe instead (two threads that happen to share one only lose that gain).
public final class StripedCounters: @unchecked Sendable {  // every access is atomic
    /// A power of two, more than the server has threads.
    private static let stripeCount = 8
    private let count: Int
    /// Counters per stripe, rounded up to whole cache lines.
    private let stride: Int
    private let storage: UnsafeMutablePointer<Atomic<Int>>

    public init(count: Int) {
        self.count = count
        stride = (count + 7) / 8 * 8
        storage = .allocate(capacity: Self.stripeCount * stride)
        for index in 0..<(Self.stripeCount * stride) {
            (storage + index).initialize(to: Atomic(0))
        }
    }

    deinit {
        storage.deinitialize(count: Self.stripeCount * stride)
        storage.deallocate()
    }

    public func add(_ amount: Int, at index: Int) {
        precondition(index >= 0 && index < count, "no such counter")
        storage[Self.currentStripe() * stride + index].add(amount, ordering: .relaxed)
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

    /// The calling thread's stripe: its id, hashed (ids are addresses, far apart and aligned).
    private static func currentStripe() -> Int {
        Int(truncatingIfNeeded: (UInt64(pthread_self()) &* 0x9E37_79B9_7F4A_7C15) >> 32) & (stripeCount - 1)
    }
}
