import Dispatch

extension DispatchTime {
    /// The instant `duration` from now, for a semaphore's wait: a stop's
    /// timeout comes as a `Duration`, which Dispatch does not take.
    static func after(_ duration: Duration) -> DispatchTime {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return .now() }
        let (nanoseconds, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return .distantFuture }
        return .now() + .nanoseconds(Int(nanoseconds + attoseconds / 1_000_000_000))
    }
}
