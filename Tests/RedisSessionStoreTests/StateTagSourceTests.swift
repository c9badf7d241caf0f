@testable import RedisSessionStore
import Testing
import TopChromeCore

/// The Redis store's state tags: a fresh one for every write, without asking
/// the kernel each time, and a sequence of its own for each process.
struct StateTagSourceTests {
    @Test func drawsAFreshTagForEveryWriteFromEveryThread() async {
        let source = StateTagSource()
        let tags = await withTaskGroup(of: [StateTag].self) { group in
            for _ in 0..<4 { group.addTask { (0..<10_000).map { _ in source.next() } } }
            return await group.reduce(into: Set<StateTag>()) { $0.formUnion($1) }
        }
        #expect(tags.count == 40_000)
        #expect(tags.allSatisfy { $0.bits < 1 << 48 })
    }

    @Test func eachProcessDrawsItsOwnSequence() {
        let first = StateTagSource(), second = StateTagSource()
        let firstTags = Set((0..<1_000).map { _ in first.next() })
        #expect(firstTags.isDisjoint(with: (0..<1_000).map { _ in second.next() }), "another replica or a restart")
    }

    @Test func neighbouringCountsGiveUnrelatedTags() {
        let tags = (0..<64).map { _ in StateTagSource(seed: 0).next().bits }
        #expect(Set(tags).count == 1)
        let source = StateTagSource(seed: 0)
        let (a, b) = (source.next().bits, source.next().bits)
        #expect((a ^ b).nonzeroBitCount > 12, "a counter's next step changes about half the bits")
    }
}
