import Dispatch
import Testing
import Locking

@Suite struct StripedCountersTests {
    /// Adds from many threads land on different stripes; every one is counted.
    @Test func concurrentAddsAreAllCounted() {
        let counters = StripedCounters(count: 3)
        DispatchQueue.concurrentPerform(iterations: 16) { thread in
            for _ in 0..<10_000 {
                counters.add(1, at: 0)
                counters.add(thread, at: 2)
            }
        }
        #expect(counters.value(at: 0) == 160_000)
        #expect(counters.value(at: 1) == 0)
        #expect(counters.value(at: 2) == (0..<16).reduce(0, +) * 10_000)
    }
}
