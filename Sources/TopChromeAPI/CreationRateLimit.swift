import Locking
import MicroHTTPD
import Synchronization

/// How fast one client address may create sessions: a token bucket of
/// `burst` creations, refilled at `perSecond`. A session lives an idle
/// `--session-ttl` at least, so one address can hold at most about
/// `perSecond` × TTL sessions at once: with the defaults, 20 × 3600 =
/// 72,000, a fourteenth of the default `--max-sessions`. Apps behind one
/// NAT share an address: 200 at once and 20 a second are about a thousand
/// devices each opening a screen a minute.
public struct CreationRatePolicy: Sendable, Equatable {
    public var perSecond: Int
    public var burst: Int

    public init(perSecond: Int, burst: Int) {
        self.perSecond = perSecond
        self.burst = burst
    }

    /// Seconds an empty bucket takes to fill: the policy's window.
    var window: Int { (burst + perSecond - 1) / perSecond }
}

/// The buckets of ``CreationRatePolicy``, one per client address (an IPv6
/// address's /64: a subscriber picks any of its 2^64 addresses at will).
///
/// Bounded in memory whatever the number of addresses: buckets live in two
/// generations of at most ``generationSize`` each; when the current one is
/// full it becomes the previous one and the previous one is dropped, so an
/// address not seen for a whole generation is forgotten (it starts again
/// with a full bucket, as a new address does). An attacker with many
/// addresses gains no more than those addresses give it anyway.
final class CreationRateLimit: MetricsFamilies, @unchecked Sendable {
    let policy: CreationRatePolicy
    static let generationSize = 50_000

    private let lock = PthreadLock()
    private var current: [SubscriberBlock?: Bucket] = [:]
    private var previous: [SubscriberBlock?: Bucket] = [:]
    private let start = ContinuousClock.now
    private let limited = Atomic<Int>(0)

    private struct Bucket {
        var tokens: Double
        /// Seconds since ``start`` when `tokens` was right.
        var updated: Double
    }

    init(_ policy: CreationRatePolicy) {
        self.policy = policy
    }

    enum Decision: Equatable {
        /// `remaining` creations may follow at once; the bucket is full again in `fullIn` seconds.
        case allowed(remaining: Int, fullIn: Int)
        /// No creation for `retryAfter` seconds.
        case limited(retryAfter: Int)
    }

    /// Takes one creation from the bucket of `client` (as ``MicroHTTPDRequest/client``
    /// gives it; nil, or text that is no address, shares one bucket).
    func take(for client: String?, at now: ContinuousClock.Instant = .now) -> Decision {
        let key = client.flatMap(ClientAddress.init)?.subscriberBlock
        let seconds = Self.seconds(now - start)
        let rate = Double(policy.perSecond), burst = Double(policy.burst)
        let decision: Decision = lock.withLock {
            var bucket = current[key] ?? previous.removeValue(forKey: key) ?? Bucket(tokens: burst, updated: seconds)
            bucket.tokens = min(burst, bucket.tokens + max(0, seconds - bucket.updated) * rate)
            bucket.updated = seconds
            let decision: Decision
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                decision = .allowed(remaining: Int(bucket.tokens), fullIn: Int(((burst - bucket.tokens) / rate).rounded(.up)))
            } else {
                decision = .limited(retryAfter: max(1, Int(((1 - bucket.tokens) / rate).rounded(.up))))
            }
            if current[key] == nil, current.count >= Self.generationSize {
                previous = current
                current = [:]
            }
            current[key] = bucket
            return decision
        }
        if case .limited = decision { limited.add(1, ordering: .relaxed) }
        return decision
    }

    /// Buckets held now (both generations), for tests of the bound.
    var bucketCount: Int {
        lock.withLock { current.count + previous.count }
    }

    func render() -> String {
        var text = MetricsText()
        text.family("topchrome_session_creations_limited_total", .counter,
                    help: "Session creations refused with 429: their client address created faster than --create-rate.")
        text.sample("topchrome_session_creations_limited_total", limited.load(ordering: .relaxed))
        return text.text
    }

    private static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

