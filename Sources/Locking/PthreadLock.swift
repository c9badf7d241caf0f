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
///
/// Inlinable, as swift-nio's `NIOLock` is: a lock taken on every request
/// then costs its caller the mutex, not a generic call and a closure.
///
/// A lock is a stored property of the state it guards, whose owner keeps
/// it (and its mutex) alive while anyone holds it; `withLock` keeps it
/// alive itself.
public struct PthreadLock: @unchecked Sendable {
    @usableFromInline let storage = MutexStorage.make()
    /// The mutex's address, found once: reached through `storage` on every
    /// call, the storage was retained and released around each lock and
    /// unlock (the compiler cannot tell that the lock's owner keeps it alive).
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>

    public init() {
        mutex = storage.withUnsafeMutablePointerToElements { $0 }
    }

    @inlinable
    public func lock() {
        _ = pthread_mutex_lock(mutex)
    }

    @inlinable
    public func unlock() {
        _ = pthread_mutex_unlock(mutex)
    }

    @inlinable
    public func withLock<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result {
        lock()
        defer {
            unlock()
            _fixLifetime(storage)
        }
        return try body()
    }
}

/// The mutex, in the same allocation as the object that owns it (as
/// swift-nio's locks keep theirs): a pthread mutex must stay at one
/// address, and a lock made for every request (an answer that comes
/// later) then costs one allocation, not two.
@usableFromInline
final class MutexStorage: ManagedBuffer<Void, pthread_mutex_t> {
    @usableFromInline
    static func make() -> MutexStorage {
        let storage = unsafeDowncast(create(minimumCapacity: 1) { _ in () }, to: MutexStorage.self)
        storage.withUnsafeMutablePointerToElements { mutex in
            mutex.initialize(to: pthread_mutex_t())
            let status = pthread_mutex_init(mutex, nil)
            precondition(status == 0, "pthread_mutex_init failed (\(status))")
        }
        return storage
    }

    deinit {
        _ = withUnsafeMutablePointerToElements { pthread_mutex_destroy($0) }
    }
}
