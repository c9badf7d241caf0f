/// Work that must not overlap, taken in turns in the order it asked: one
/// who finds the turn taken waits until it is handed over, and is woken
/// by that, not by polling.
@MainActor final class OneAtATime {
    private var isTaken = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    /// Those waiting for the turn now.
    var waitingCount: Int { waiting.count }

    /// Returns once the turn is this caller's; give it back with `end()`.
    func begin() async {
        guard isTaken else {
            isTaken = true
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    /// Hands the turn to the one who waited longest, if anyone waits.
    func end() {
        if waiting.isEmpty {
            isTaken = false
        } else {
            waiting.removeFirst().resume()
        }
    }
}
