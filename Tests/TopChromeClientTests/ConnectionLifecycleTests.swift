import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import TopChromeClient

/// What an app does around the connection (issue 37 items 6 and 7):
/// reconnecting at once when it knows the network is back, reading errors
/// as sentences and telling offline from timed out, and leaving nothing
/// behind in a session that outlives its screen.
@Suite(.timeLimit(.minutes(10))) struct ConnectionLifecycleTests {
    /// Through an outage the backoff grows; `reconnect()` opens the stream
    /// at once when the server is back, without waiting it out.
    @Test @MainActor func reconnectOpensTheStreamNowWithoutTheBackoff() async throws {
        let folder = try StateFolder()
        let server = try TestServer { $0.stateFile.path = folder.stateFile }
        let client = server.client {
            $0.retry = RetryPolicy(initialDelay: 600, maximumDelay: 600, maximumAttempts: 50, maximumRetryAfter: 600)
        }
        let chrome = RemoteTopChrome(session: try await client.createSession(inset: 59))
        chrome.start()
        defer { chrome.stop() }
        #expect(await eventually { chrome.connection == .live })

        server.stop()
        // A wait long enough to tell reconnect() from the backoff's own
        // attempt (shorter ones drawn first are waited out; the server's
        // `retry:` sets where the backoff starts, so it grows from 2 s).
        #expect(await eventually(within: 45) { if case let .retrying(after) = chrome.connection { after > 10 } else { false } },
                "\(chrome.connection)")
        guard case let .retrying(after) = chrome.connection else { return }
        let backoffEnds = ContinuousClock.now + .milliseconds(Int(after * 1000))
        try server.start()
        chrome.reconnect()
        #expect(await eventually(within: min(after, 10)) { chrome.connection == .live }, "\(chrome.connection)")
        #expect(ContinuousClock.now < backoffEnds, "live before the backoff's own attempt")
        #expect(chrome.lastError == nil)
    }

    /// An alert showing `localizedDescription` reads what went wrong.
    @Test func errorsReadAsTheirDescription() {
        let error: any Error = TopChromeError.sessionGone(id: "abc")
        #expect(error.localizedDescription == "session abc is gone")
        #expect(TopChromeError.reportsDropped(3).localizedDescription.hasPrefix("3 of the oldest reports"))
    }

    /// A refused connection keeps its URLError code, so an app can tell
    /// offline from timed out from a server that is down.
    @Test func aTransportFailureKeepsItsURLErrorCode() async throws {
        let server = try TestServer()
        let client = server.client { $0.retry.maximumAttempts = 1 }
        server.stop()
        do {
            _ = try await client.createSession()
            Issue.record("created with the server stopped")
        } catch let TopChromeError.transport(_, code) {
            #expect(code == .cannotConnectToHost, "\(String(describing: code))")
        }
    }

    /// Each `RemoteTopChrome` made for a session (a view's `@State`, made
    /// again and again) stops being told of its reports when it goes.
    @Test @MainActor func aRemoteTopChromeLeavesNoObserverBehind() async throws {
        let server = try TestServer()
        let session = try await server.client().createSession(inset: 59)
        for _ in 0..<20 {
            let chrome = RemoteTopChrome(session: session)
            chrome.report(contentOffsetY: 10, contentInsetTop: 59)
        }
        let gone = await eventually { await session.observers.isEmpty }
        let left = await session.observers.count
        #expect(gone, "\(left) observers left")
    }
}
