import Dispatch
#if canImport(Glibc)
import Glibc
#endif
import Locking
import Testing

@Suite struct PthreadLockTests {
    /// A counter whose increment is a read and a write with a yield between:
    /// threads that are not kept apart lose increments.
    private final class Counter: @unchecked Sendable {
        var value = 0

        func increment() {
            let read = value
            sched_yield()
            value = read + 1
        }
    }

    @Test func keepsThreadsApart() {
        let lock = PthreadLock(), counter = Counter()
        let threads = 4, rounds = 5_000
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for round in 0..<rounds {
                if (thread + round).isMultiple(of: 2) {
                    lock.withLock { counter.increment() }
                } else {
                    lock.lock()
                    counter.increment()
                    lock.unlock()
                }
            }
        }
        #expect(counter.value == threads * rounds)
    }

    @Test func withLockPassesResultsAndErrorsThrough() {
        struct Refused: Error {}
        let lock = PthreadLock()
        #expect(lock.withLock { 42 } == 42)
        #expect(throws: Refused.self) { try lock.withLock { throw Refused() } }
        #expect(lock.withLock { "free again" } == "free again", "a throwing body leaves the lock free")
    }
}
