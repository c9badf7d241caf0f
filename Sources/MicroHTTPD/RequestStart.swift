#if canImport(Glibc)
import Glibc
#endif

/// When a request arrived, for its duration: read from the kernel's
/// monotonic clock as it is. `ContinuousClock` goes through the runtime
/// and 128-bit arithmetic, and every request reads the clock twice (its
/// arrival, its answer).
struct RequestStart {
    private let nanoseconds: Int64

    static var now: RequestStart {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return RequestStart(nanoseconds: Int64(time.tv_sec) &* 1_000_000_000 &+ Int64(time.tv_nsec))
    }

    /// From this start until now.
    var elapsed: Duration {
        .nanoseconds(Self.now.nanoseconds - nanoseconds)
    }
}
