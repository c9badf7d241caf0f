import Synchronization
import TopChromeCore

/// Where the Redis store's writes draw their state tags: one draw from the
/// kernel's random source per process, then a counter scrambled by
/// SplitMix64, shared by every thread without a lock.
///
/// A tag needs to be unlikely to repeat, not unguessable: it tells a lost
/// state from the one that took its version, and a client that guessed one
/// learns nothing the ETag would not tell it. Asking the kernel for every
/// write cost a system call per request. Each replica and each restart
/// seeds its own sequence, so tags still differ across replicas and across
/// a restart; within one process the scramble is a bijection of the
/// counter, so its tags repeat only as 48-bit values do.
final class StateTagSource: Sendable {
    /// The tags every change on this replica draws from.
    static let shared = StateTagSource()

    private let counter: Atomic<UInt64>

    init() {
        var system = SystemRandomNumberGenerator()
        counter = Atomic(system.next())
    }

    /// A sequence of its own from `seed`, for tests.
    init(seed: UInt64) {
        counter = Atomic(seed)
    }

    func next() -> StateTag {
        let gamma: UInt64 = 0x9E37_79B9_7F4A_7C15
        var z = counter.wrappingAdd(gamma, ordering: .relaxed).newValue
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return StateTag(bits: z ^ (z >> 31))
    }
}
