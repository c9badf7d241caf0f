import Testing
@testable import MicroHTTPD
@testable import TopChromeServer

@Suite struct RefusalLogTests {
    /// Refusals reach no access log: a warn line sums them up, at most one a
    /// minute, and none while nothing is refused.
    @Test func aSummaryAtMostOnceAMinuteWhileRefusalsHappen() {
        let log = CapturedLog(.text)
        let counts = ConnectionCounts()
        let summary = RefusalLog(counts: counts, logger: log.logger)
        let start = ContinuousClock.now
        summary.check(now: start)
        #expect(log.errorLines.isEmpty, "nothing refused, nothing said")
        counts.count(.perAddressLimit)
        counts.count(.perAddressLimit)
        counts.count(.requestTimeout)
        summary.check(now: start + .seconds(1))
        #expect(log.errorLines.count == 1)
        #expect(log.errorLines.first?.contains("per_address_limit=2 request_timeout=1") == true, "\(log.errorLines)")
        counts.count(.connectionLimit)
        summary.check(now: start + .seconds(30))
        #expect(log.errorLines.count == 1, "not again within the minute")
        summary.check(now: start + .seconds(62))
        #expect(log.errorLines.count == 2)
        #expect(log.errorLines.last?.contains("connection_limit=1") == true)
        #expect(log.errorLines.last?.contains("per_address_limit") == false, "only what is new")
        summary.check(now: start + .seconds(200))
        #expect(log.errorLines.count == 2, "nothing new, nothing said")
    }
}
