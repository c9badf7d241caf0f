import MemorySessionStore
import RedisSessionStore
import RuleStatistics
import SessionWatching
import TopChromeAPI
import TopChromeCore

/// The one place the service's sessions live, chosen by `--store`: what
/// the API sees of it is the core's interface; the rest (a state file, a
/// Redis client's checks and chores) is the backend's own.
public enum StoreBackend: Sendable {
    case memory(MemoryBackend)
    case redis(RedisBackend)

    /// The sessions as the API sees them.
    var sessions: any SessionStore & SessionChangeFeed {
        switch self {
        case let .memory(memory): memory.store
        case let .redis(redis): redis.store
        }
    }

    var statistics: ChromeStatistics {
        switch self {
        case let .memory(memory): memory.store.statistics
        case let .redis(redis): redis.store.statistics
        }
    }

    /// `/metrics` families of the store.
    var metrics: [any MetricsFamilies] {
        switch self {
        case let .memory(memory): memory.metrics
        case let .redis(redis): redis.metrics
        }
    }

    var readinessDetails: [any ReadinessDetail] {
        switch self {
        case let .memory(memory): memory.readinessDetails
        case .redis: []
        }
    }

    /// The backend as a plain reference. An enum of two class payloads
    /// keeps its case in the pointer's spare bits, which LeakSanitizer
    /// cannot follow: a holder keeps this beside it, or a server that
    /// exits holding the backend is reported as leaking it.
    var object: any AnyObject & Sendable {
        switch self {
        case let .memory(memory): memory
        case let .redis(redis): redis
        }
    }

    /// The sessions in this process, for a caller that needs that store (tests, the fuzz harness).
    public var memoryStore: InMemorySessionStore? {
        if case let .memory(memory) = self { memory.store } else { nil }
    }

    /// The sessions in Redis, likewise.
    public var redisStore: RedisSessionStore? {
        if case let .redis(redis) = self { redis.store } else { nil }
    }
}
