/// How long to wait before trying again: capped exponential backoff with
/// full jitter (a random wait between zero and the cap of this attempt), so
/// many clients that failed together do not come back together; never
/// sooner than the service asked with `Retry-After`.
public struct RetryPolicy: Sendable, Hashable {
    /// The cap of the first retry's wait, in seconds; each retry doubles it.
    public var initialDelay: Double
    /// The largest wait between two attempts, in seconds.
    public var maximumDelay: Double
    /// Attempts per request, the first included, before its error surfaces.
    /// Event streams reconnect without such a limit.
    public var maximumAttempts: Int
    /// The longest `Retry-After` honoured, in seconds, so that a service
    /// asking for an hour does not stall an app that long.
    public var maximumRetryAfter: Double

    public init(initialDelay: Double = 0.25, maximumDelay: Double = 30,
                maximumAttempts: Int = 8, maximumRetryAfter: Double = 120) {
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
        self.maximumAttempts = maximumAttempts
        self.maximumRetryAfter = maximumRetryAfter
    }

    /// The wait before retry number `retry` (0 for the first), given the
    /// service's `Retry-After` if it sent one and `random` in 0..<1.
    package func delay(retry: Int, retryAfter: Double?, random: Double) -> Double {
        let ceiling = min(maximumDelay, initialDelay * Double(1 << min(retry, 30)))
        let jittered = random * ceiling
        guard let retryAfter else { return jittered }
        return max(jittered, min(max(retryAfter, 0), maximumRetryAfter))
    }

    /// Sleeps for retry number `retry`; throws if the task is cancelled.
    func pause(retry: Int, retryAfter: Double?) async throws {
        let seconds = delay(retry: retry, retryAfter: retryAfter, random: Double.random(in: 0..<1))
        try await Task.sleep(nanoseconds: UInt64(seconds * 1_000_000_000))
    }
}
