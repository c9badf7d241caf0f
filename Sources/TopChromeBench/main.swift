import MemorySessionStore
import TopChromeCore

// The core without HTTP: nanoseconds per scroll report applied by the rules
// alone and through the in-memory store (lock, lookup, version, change feed).
// A benchmark, run by `make bench`; not a test.

func measure(_ name: String, iterations: Int, _ body: (Int) -> Void) {
    let clock = ContinuousClock()
    body(0)  // warm
    var best = Duration.seconds(1000)
    for _ in 0..<5 {
        let elapsed = clock.measure {
            for iteration in 0..<iterations { body(iteration) }
        }
        best = min(best, elapsed)
    }
    let nanoseconds = Double(best.components.seconds) * 1e9 + Double(best.components.attoseconds) / 1e9
    print("\(name): \(String(format: nanoseconds / Double(iterations))) ns per report (best of 5 x \(iterations))")
}

func String(format value: Double) -> String {
    let tenths = Int((value * 10).rounded())
    return "\(tenths / 10).\(tenths % 10)"
}

let rules = ChromeRules()
let down = ChromeInput.scroll(ScrollReport(contentOffsetY: 379.5))
let top = ChromeInput.scroll(ScrollReport(contentOffsetY: 0.5))
var state = ChromeState()
measure("rules (pure)", iterations: 2_000_000) { iteration in
    state = rules.apply(iteration & 1 == 0 ? down : top, to: state)
}

let store = InMemorySessionStore()
let ids = (0..<1000).map { _ in try! store.create(inset: 0).id }
// A lone report, as the API applies one; then the same report as a batch of one.
measure("store.apply, one report (1000 sessions, every report flips)", iterations: 1_000_000) { iteration in
    let input = (iteration / ids.count) & 1 == 0 ? down : top
    _ = store.apply(input, to: ids[iteration % ids.count], if: .always)
}
measure("store.apply, batch of one", iterations: 1_000_000) { iteration in
    let input = (iteration / ids.count) & 1 == 0 ? down : top
    _ = store.apply([input], to: ids[iteration % ids.count])
}
print("applied: \(store.statistics.reportsApplied), flips: \(store.statistics.revealFlips), final version \(state.version)")
