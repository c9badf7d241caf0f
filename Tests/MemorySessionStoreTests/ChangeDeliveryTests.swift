import Dispatch
import Foundation
import MemorySessionStore
import SessionWatching
import Testing
import TopChromeCore

/// Watchers hear of changes after the store released the session: one slow
/// to take its event holds up no writer, and every session's changes still
/// arrive in order.
@Suite struct ChangeDeliveryTests {
    private let down = ChromeInput.scroll(ScrollReport(contentOffsetY: 400))
    private let top = ChromeInput.scroll(ScrollReport(contentOffsetY: 0))

    /// Takes its first change only once let go.
    final class SlowWatcher: SessionSubscriber, @unchecked Sendable {
        let entered = DispatchSemaphore(value: 0)
        let letGo = DispatchSemaphore(value: 0)
        private let lock = NSLock()
        private var versions: [UInt64] = []
        func sessionChanged(_ change: SessionChange) -> Bool {
            let first = lock.withLock { versions.isEmpty }
            if first {
                entered.signal()
                letGo.wait()
            }
            lock.withLock { versions.append(change.session.state.version) }
            return true
        }
        func sessionRemoved(_ id: SessionID) {}
        var seen: [UInt64] { lock.withLock { versions } }
    }

    @Test func aSlowWatcherHoldsUpNoWriterOfItsShard() throws {
        // One shard: every session shares its lock.
        let store = InMemorySessionStore(shardCount: 1)
        let watched = try store.create(inset: 0).id, other = try store.create(inset: 0).id
        let slow = SlowWatcher(), quick = Recorder()
        _ = try store.subscribe(slow, to: watched)
        _ = try store.subscribe(quick, to: other)
        let down = self.down
        let firstWriter = Thread(block: { _ = store.apply([down], to: watched) })
        firstWriter.start()
        #expect(slow.entered.wait(timeout: .now() + 10) == .success, "the watcher is given its change")
        // The watcher is stuck in its first change: writers go on, to the
        // watched session and to another, and none waits for it.
        let (top, written) = (self.top, DispatchSemaphore(value: 0))
        DispatchQueue.global().async {
            for step in 0..<200 {
                _ = store.apply([step % 2 == 0 ? top : down], to: other)
                _ = store.apply([step % 2 == 0 ? top : down], to: watched)
            }
            written.signal()
        }
        let wroteAll = written.wait(timeout: .now() + 10) == .success
        #expect(wroteAll, "no writer waited for the watcher")
        #expect(store.session(watched)?.state.version == 202)
        #expect(slow.seen.isEmpty && quick.recorded.isEmpty, "what the busy deliverer holds waits for it, in order")
        slow.letGo.signal()
        if !wroteAll { written.wait() }
        firstWriter.join()
        #expect(slow.seen == Array(2...202))
        let otherLast = try #require(store.session(other)?.state.version)
        #expect(quick.recorded.map(\.version) == Array(2...otherLast))
    }

    /// Many writers on few shards, each session watched: each watcher hears
    /// its session's versions in order, none missed, none twice.
    @Test func orderHoldsWhileWritersRace() async throws {
        let store = InMemorySessionStore(shardCount: 2)
        let ids = try (0..<6).map { _ in try store.create(inset: 0).id }
        let watchers = try ids.map { id in
            let recorder = Recorder()
            _ = try store.subscribe(recorder, to: id)
            return recorder
        }
        await withTaskGroup(of: Void.self) { group in
            for writer in 0..<4 {
                group.addTask {
                    for step in 0..<500 {
                        let id = ids[(writer + step) % ids.count]
                        _ = store.apply([step % 2 == 0 ? self.down : self.top, .setInset(Double(step % 7))], to: id)
                    }
                }
            }
        }
        for (id, watcher) in zip(ids, watchers) {
            let last = try #require(store.session(id)?.state.version)
            #expect(watcher.recorded.map(\.version) == Array(2...last))
        }
    }
}

extension Thread {
    /// Waits for the thread to end (Foundation's `Thread` has no join).
    func join() {
        while !isFinished { Thread.sleep(forTimeInterval: 0.001) }
    }
}
