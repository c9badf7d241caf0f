import Testing
@testable import MemorySessionStore
import TopChromeCore
import TopChromeTesting

@Suite struct IdleClockTests {
    private static let timeouts: [Duration] = [
        .zero, .milliseconds(1500), .seconds(1), .seconds(60), .seconds(3600), .seconds(86_400 * 56),
        .seconds(86_400 * 200), .seconds(10 * 365 * 86_400),
    ]

    private static func tickLength(_ clock: IdleClock) -> Duration {
        Duration(attoseconds: 1 << clock.shift)
    }

    /// Whole-tick ages: a session never expires before its timeout, and surely
    /// two ticks after it; also where the 23-bit count wraps around.
    @Test(arguments: timeouts)
    func neverEarlyAtMostTwoTicksLate(timeout: Duration) {
        let clock = IdleClock(idleTimeout: timeout)
        let tick = Self.tickLength(clock)
        #expect(clock.timeoutTicks <= 1 << (IdleClock.bits - 1), "the timeout takes at most half the span")
        var rng = SplitMix(seed: 11)
        let span = tick * Int(1 << IdleClock.bits)
        for _ in 0..<2000 {
            // Any start, many near the wrap-around of the 23-bit count.
            let start = Bool.random(using: &rng)
                ? span * Double.random(in: 0..<50, using: &rng)
                : span * Int.random(in: 1...3, using: &rng) - tick * Double.random(in: 0..<8, using: &rng)
            let age = (timeout + tick * 3) * Double.random(in: 0...1, using: &rng)
            let expired = clock.isExpired(lastUsed: clock.tick(at: start), now: clock.tick(at: start + age))
            if age <= timeout { #expect(!expired, "early: \(age) of \(timeout)") }
            if age > timeout + tick * 2 { #expect(expired, "late: \(age) of \(timeout)") }
        }
    }

    @Test func aTickIsAboutASecondUpToFiftySixDays() {
        #expect(IdleClock(idleTimeout: .seconds(3600)).shift == IdleClock.finestShift)
        #expect(IdleClock(idleTimeout: .seconds(86_400 * 48)).shift == IdleClock.finestShift)
        #expect(IdleClock(idleTimeout: .seconds(86_400 * 200)).shift > IdleClock.finestShift)
    }

    @Test func negativeTimeoutExpiresEverything() {
        let clock = IdleClock(idleTimeout: .seconds(-1))
        #expect(clock.isExpired(lastUsed: 5, now: 5))
    }
}
