@testable import TopChromeClient
import Testing

/// How `ReportOutbox`'s drains take turns: one waiting for another is woken
/// when that one ends, in the order they came.
@Suite(.timeLimit(.minutes(10))) struct OneAtATimeTests {
    @Test @MainActor func aWaiterRunsWhenTheTurnIsHandedOverInTheOrderItAsked() async {
        let turns = OneAtATime()
        await turns.begin()
        var ran: [Int] = []
        let second = Task { @MainActor in
            await turns.begin()
            ran.append(2)
            turns.end()
        }
        // Queued behind the second, on the main actor: it asks after it.
        while turns.waitingCount < 1 { await Task.yield() }
        let third = Task { @MainActor in
            await turns.begin()
            ran.append(3)
            turns.end()
        }
        while turns.waitingCount < 2 { await Task.yield() }
        #expect(ran.isEmpty, "nobody runs while the turn is taken")
        turns.end()
        await second.value
        await third.value
        #expect(ran == [2, 3])
        #expect(turns.waitingCount == 0)
        // Free again: taken at once.
        await turns.begin()
        turns.end()
    }
}
