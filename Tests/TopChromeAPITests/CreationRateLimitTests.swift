import Testing
@testable import TopChromeAPI

/// The buckets behind the creation limit, on a clock the test moves.
@Suite struct CreationRateLimitTests {
    let start = ContinuousClock.now

    @Test func aBucketRefillsAtItsRateUpToItsBurst() {
        let limit = CreationRateLimit(CreationRatePolicy(perSecond: 2, burst: 3))
        #expect(limit.take(for: "192.0.2.1", at: start) == .allowed(remaining: 2, fullIn: 1))
        #expect(limit.take(for: "192.0.2.1", at: start) == .allowed(remaining: 1, fullIn: 1))
        #expect(limit.take(for: "192.0.2.1", at: start) == .allowed(remaining: 0, fullIn: 2))
        #expect(limit.take(for: "192.0.2.1", at: start) == .limited(retryAfter: 1))
        #expect(limit.take(for: "192.0.2.1", at: start + .milliseconds(500)) == .allowed(remaining: 0, fullIn: 2))
        // A long pause fills the bucket, and no further.
        #expect(limit.take(for: "192.0.2.1", at: start + .seconds(60)) == .allowed(remaining: 2, fullIn: 1))
    }

    /// However many addresses come, the buckets kept stay bounded; the
    /// addresses seen lately keep theirs.
    @Test func theTableIsBounded() {
        let limit = CreationRateLimit(CreationRatePolicy(perSecond: 1, burst: 2))
        _ = limit.take(for: "2001:db8::1", at: start)
        _ = limit.take(for: "2001:db8::1", at: start)
        for index in 0..<(3 * CreationRateLimit.generationSize) {
            _ = limit.take(for: "10.\(index >> 16 & 255).\(index >> 8 & 255).\(index & 255)", at: start)
            if index % 1000 == 0 { _ = limit.take(for: "2001:db8::2", at: start) }  // the same /64, seen often
        }
        #expect(limit.bucketCount <= 2 * CreationRateLimit.generationSize)
        #expect(limit.take(for: "2001:db8::3", at: start) == .limited(retryAfter: 1), "the /64 kept its empty bucket")
    }
}
