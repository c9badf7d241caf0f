import Dispatch
import Locking

/// What libmicrohttpd does not check, checked a few times a second: a
/// request's head and body arriving within the request timeout
/// (``OpenConnections/sweep(now:timeout:)``), and suspended
/// connections (long-polls, event streams with nothing to send) whose
/// client has left, which the library notices only once it is resumed:
/// until then each holds its descriptor and its watcher's place.
final class ConnectionSweep: @unchecked Sendable {
    /// Often enough that a departed watcher's place is free within a second.
    static let longestInterval: Duration = .milliseconds(500)

    private let connections: OpenConnections
    private let suspensions: SuspensionRegistry
    private let interval: Duration
    /// The request timeout in milliseconds; nil for none.
    private let timeoutMilliseconds: Int?
    private let lock = PthreadLock()
    private var timer: (any DispatchSourceTimer)?
    /// Held while a sweep runs, so ``stop()`` can wait for one under way.
    private let running = PthreadLock()
    /// Set by ``stop()``, under `running`.
    private var isStopped = false
    /// Times are counted in milliseconds from here.
    private let origin = ContinuousClock.now

    init(connections: OpenConnections, suspensions: SuspensionRegistry, requestTimeout: Duration?) {
        self.connections = connections
        self.suspensions = suspensions
        if let requestTimeout, requestTimeout > .zero {
            interval = max(min(Self.longestInterval, requestTimeout / 4), .milliseconds(20))
            timeoutMilliseconds = Int((requestTimeout / .milliseconds(1)).rounded(.up))
        } else {
            interval = Self.longestInterval
            timeoutMilliseconds = nil
        }
    }

    func start() {
        running.withLock { isStopped = false }
        let timer = DispatchSource.makeTimerSource(queue: .global(qos: .utility))
        let seconds = Double(interval.components.seconds) + Double(interval.components.attoseconds) / 1e18
        timer.schedule(deadline: .now() + seconds, repeating: seconds)
        timer.setEventHandler { [self] in run() }
        lock.withLock { self.timer = timer }
        timer.resume()
    }

    /// Returns once no sweep runs or will: cancelling a Dispatch timer does
    /// not wait for a handler under way, and a sweep must not touch a
    /// connection while libmicrohttpd stops.
    func stop() {
        lock.withLock {
            timer?.cancel()
            timer = nil
        }
        running.withLock { isStopped = true }
    }

    private func run() {
        running.withLock {
            guard !isStopped else { return }
            sweepOnce()
        }
    }

    private func sweepOnce() {
        if let timeoutMilliseconds {
            // Times as the sweep reads them, never before a request's first
            // byte came: a late sweep makes a 408 late, never early.
            let now = Int((ContinuousClock.now - origin) / .milliseconds(1))
            connections.sweep(now: now, timeout: timeoutMilliseconds)
        }
        suspensions.endThoseWhoseClientLeft()
    }
}
