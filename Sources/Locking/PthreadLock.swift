#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A lock for state that several threads share (libmicrohttpd's and the
/// service's, a Redis connection's I/O thread and its callers). A pthread mutex rather than `Synchronization.Mutex`, on which the thread
/// sanitizer reports false races with this toolchain, and rather than
/// `NSLock`, which would link Foundation, and with it ICU's data, into the
/// server binary.
public final class PthreadLock: @unchecked Sendable {
    // Allocated once and never moved: a pthread mutex must stay at one address.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    public init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        let status = pthread_mutex_init(mutex, nil)
        precondition(status == 0, "pthread_mutex_init failed (\(status))")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    public func lock() {
        pthread_mutex_lock(mutex)
    }

    public func unlock() {
        pthread_mutex_unlock(mutex)
    }

    public func withLock<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result {
        lock()
        defer { unlock() }
        return try body()
    }
}
