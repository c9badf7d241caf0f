import Foundation
import Observation
import Testing
import TopChromeClient

/// `RemoteTopChrome` on the main actor, watched as SwiftUI watches it.
@Suite(.timeLimit(.minutes(10))) struct RemoteTopChromeTests {
    /// Counts the changes of one property that Observation reports, as a
    /// view's body would be invalidated.
    final class ChangeCounter: @unchecked Sendable {
        private let lock = NSLock()
        private var count = 0
        var value: Int { lock.withLock { count } }
        func add() { lock.withLock { count += 1 } }
    }

    /// Tracks `read` again after every change, as a view does when it redraws.
    @MainActor static func track(_ read: @escaping @MainActor @Sendable () -> Void, into counter: ChangeCounter) {
        withObservationTracking { read() } onChange: {
            counter.add()
            Task { @MainActor in track(read, into: counter) }
        }
    }

    /// A report the service would refuse moves nothing on screen and says why.
    @Test @MainActor func aNonFiniteReportMovesNothing() async throws {
        let server = try TestServer()
        let (_, chrome) = try await followingChrome(on: server)
        defer { chrome.stop() }
        chrome.report(contentOffsetY: .infinity, contentInsetTop: 59)
        #expect(chrome.isRevealed && chrome.heightOffset == 0)
        guard case .invalidValue? = chrome.lastReportError, chrome.reportsLost == 1 else {
            Issue.record("not told: \(String(describing: chrome.lastReportError))")
            return
        }
    }

    @Test @MainActor func flipsAreObservedAndNothingElse() async throws {
        let server = try TestServer()
        let (session, chrome) = try await followingChrome(on: server)
        defer { chrome.stop() }

        let flips = ChangeCounter(), insets = ChangeCounter()
        // Weakly: a registration still pending at the end must not keep
        // `chrome` alive (it holds the registration).
        Self.track({ [weak chrome] in _ = chrome?.isRevealed }, into: flips)
        Self.track({ [weak chrome] in _ = chrome?.inset }, into: insets)

        chrome.report(contentOffsetY: 300, contentInsetTop: 59)
        #expect(await eventually { !chrome.isRevealed })
        #expect(flips.value == 1)

        // Reports that change nothing, and an inset change: no flip.
        chrome.report(contentOffsetY: 400, contentInsetTop: 59)
        try await session.setInset(47)
        #expect(await eventually { chrome.inset == 47 })
        #expect(flips.value == 1, "a view reading isRevealed redraws on flips only")
        #expect(insets.value == 1)

        chrome.report(contentOffsetY: -47, contentInsetTop: 47)
        #expect(await eventually { chrome.isRevealed })
        #expect(flips.value == 2)
    }

    /// `disappear` reveals at once, before the service answers, then tells it.
    @Test @MainActor func disappearRevealsAtOnce() async throws {
        let server = try TestServer()
        let session = try await server.client().createSession(inset: 59)
        let chrome = RemoteTopChrome(session: session)
        chrome.start()
        defer { chrome.stop() }
        chrome.report(contentOffsetY: 300, contentInsetTop: 59)
        #expect(await eventually { !chrome.isRevealed })
        chrome.disappear()
        #expect(chrome.isRevealed, "without waiting for the service")
        #expect(await eventually { (try? await session.state().isRevealed) == true }, "the service is told")
        #expect(chrome.isRevealed)
    }

    /// `stop` ends the event stream (the server's watcher count drops).
    @Test @MainActor func stopEndsTheStream() async throws {
        let server = try TestServer { $0.sessions.heartbeatSeconds = 1 }
        let chrome = RemoteTopChrome(session: try await server.client().createSession())
        chrome.start()
        #expect(try await eventually { try await server.gauge("topchrome_watchers") == 1 })
        chrome.stop()
        #expect(try await eventually { try await server.gauge("topchrome_watchers") == 0 })
    }

    /// A chrome following a new session (inset 59) on `server`, once its first state arrived.
    @MainActor private func followingChrome(on server: TestServer) async throws -> (ChromeSession, RemoteTopChrome) {
        let session = try await server.client().createSession(inset: 59)
        let chrome = RemoteTopChrome(session: session)
        chrome.start()
        #expect(await eventually { chrome.inset == 59 }, "the first state arrives")
        return (session, chrome)
    }

}
