/// Idle expiry on 23 bits per session, so that the last use fits into a
/// session's slot beside its version.
///
/// Times are counted in ticks and kept modulo 2^23; an age is the difference
/// of two such values, also modulo 2^23. That is right as long as no session
/// is judged more than 2^23 ticks after its last use. A tick is 2^60
/// attoseconds (≈ 1.15 s), making that span ≈ 112 days; only for timeouts
/// over ≈ 56 days is a tick coarser, so that the timeout never takes more
/// than half the span. The other half is the slack for sweeps:
/// `removeExpired()` must run at least every 2^22 ticks (≥ 56 days; the
/// service runs it at least every 60 s). A session left idle for longer
/// than the whole span without a sweep in between might look young again.
///
/// Ages are whole ticks and the timeout is rounded up to ticks, so a session
/// is never dropped early, and at most two ticks late.
struct IdleClock: Sendable {
    static let bits = 23
    static let mask: UInt64 = (1 << bits) - 1
    /// The finest tick: 2^60 attoseconds ≈ 1.15 s. Expiry needs no better,
    /// and a coarse tick gives a long span.
    static let finestShift = 60

    /// A tick is 2^shift attoseconds (2^shift seconds on Apple systems without Int128).
    let shift: Int
    /// The timeout in ticks, rounded up; -1 for a negative timeout (all expire).
    let timeoutTicks: Int64

    init(idleTimeout: Duration) {
        guard idleTimeout >= .zero else {
            (shift, timeoutTicks) = (Self.finestShift, -1)
            return
        }
        if #available(macOS 15, iOS 18, watchOS 11, tvOS 18, visionOS 2, *) {
            let timeout = idleTimeout.attoseconds
            let width = Int128.bitWidth - timeout.leadingZeroBitCount
            shift = max(Self.finestShift, width - (Self.bits - 1))
            let roundsUp = timeout & ((1 << shift) - 1) != 0
            timeoutTicks = Int64(timeout >> shift) + (roundsUp ? 1 : 0)
        } else {
            let seconds = idleTimeout.components.seconds
            shift = max(0, Int64.bitWidth - seconds.leadingZeroBitCount - (Self.bits - 1))
            timeoutTicks = seconds >> shift + 1
        }
    }

    /// `time` in ticks, modulo 2^23.
    @inline(__always)
    func tick(at time: Duration) -> UInt64 {
        if #available(macOS 15, iOS 18, watchOS 11, tvOS 18, visionOS 2, *) {
            return UInt64(truncatingIfNeeded: time.attoseconds >> shift) & Self.mask
        } else {
            return UInt64(truncatingIfNeeded: time.components.seconds >> shift) & Self.mask
        }
    }

    /// Whether a session last used at tick `lastUsed` has expired at tick `now`.
    @inline(__always)
    func isExpired(lastUsed: UInt64, now: UInt64) -> Bool {
        Int64(bitPattern: (now &- lastUsed) & Self.mask) > timeoutTicks
    }
}
