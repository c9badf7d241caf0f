#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Guards the state a connection's I/O thread shares with its callers.
/// A pthread mutex: `Synchronization.Mutex` gives false thread-sanitizer
/// reports with this toolchain, and `NSLock` would bring in Foundation.
final class Lock: @unchecked Sendable {
    // Allocated once and never moved: a pthread mutex must stay at one address.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        let status = pthread_mutex_init(mutex, nil)
        precondition(status == 0, "pthread_mutex_init failed (\(status))")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    func withLock<Result>(_ body: () throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}
