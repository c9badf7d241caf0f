import Foundation
import TopChromeCore

/// A watcher that leaves from inside the first change it is told of, as a
/// watcher whose client went away may: a feed that called it under a lock
/// its `unsubscribe` takes would deadlock.
public final class LeavesWhenTold: SessionSubscriber, @unchecked Sendable {
    private let feed: any SessionChangeFeed
    private let lock = NSLock()
    private var told = 0

    public init(feed: any SessionChangeFeed) {
        self.feed = feed
    }

    /// Changes it was told of; one, once it has left.
    public var changesTold: Int { lock.withLock { told } }

    public func sessionChanged(_ change: SessionChange) -> Bool {
        feed.unsubscribe(self, from: change.session.id)
        lock.withLock { told += 1 }
        return true
    }

    public func sessionRemoved(_ id: SessionID) {}
}

/// A watcher that takes its time over a change: it says it is being told,
/// then holds the thread that tells it until `release()`.
public final class HeldWhenTold: SessionSubscriber, @unchecked Sendable {
    private let told = DispatchSemaphore(value: 0)
    private let released = DispatchSemaphore(value: 0)

    public init() {}

    /// Waits until a change is being told (`seconds` times `testTimeScale`).
    public func waitUntilTold(within seconds: Double = 5) -> Bool {
        told.wait(timeout: .now() + seconds * testTimeScale) == .success
    }

    /// Lets the change being told go; once for each change.
    public func release() {
        released.signal()
    }

    public func sessionChanged(_ change: SessionChange) -> Bool {
        told.signal()
        released.wait()
        return true
    }

    public func sessionRemoved(_ id: SessionID) {}
}
