import Foundation
import Testing
import TopChromeClient
import enum TopChromeCore.RevealBehavior

/// Changing a session's behaviour from the library, against the real
/// server: the service takes the whole choice, refuses a bad one, and a
/// `RemoteTopChrome` predicts with the new behaviour once the service names it.
@Suite(.timeLimit(.minutes(10))) struct BehaviorLiveTests {
    static let behavior = "/v1/sessions/{id}/behavior"

    @Test func setBehaviorTakesTheWholeChoice() async throws {
        let server = try TestServer()
        let session = try await server.client().createSession(inset: 59)
        let changed = try await session.setBehavior(.enterAlways, collapsibleHeight: 44, snap: true)
        #expect(changed.behavior == .enterAlways && changed.collapsibleHeight == 44 && changed.snap)
        #expect(changed.version == 2)
        #expect(try await session.state() == changed)
        #expect(try await server.requests("PUT", Self.behavior, status: 200) == 1)

        // What the call leaves out takes its default: the whole inset, no snapping.
        let plain = try await session.setBehavior(.exitUntilCollapsed)
        #expect(plain.behavior == .exitUntilCollapsed && plain.collapsibleHeight == 59 && !plain.snap)

        // Queued in order: the report is applied by the behaviour chosen before it.
        await session.report(contentOffsetY: 100, contentInsetTop: 59)
        let pinned = try await session.setBehavior(.pinned)
        #expect(pinned.behavior == .pinned && pinned.isRevealed && pinned.lastSeq == 1)
    }

    @Test func aBadChoiceIsRefusedWithItsProblem() async throws {
        let server = try TestServer()
        let session = try await server.client().createSession(inset: 59)
        do {
            try await session.setBehavior(.enterAlways, collapsibleHeight: -5)
            Issue.record("a negative height was taken")
        } catch let TopChromeError.rejected(problem) {
            #expect(problem.status == 400)
            #expect(problem.detail?.contains("collapsibleHeight") == true, "\(problem)")
        }
        await #expect(throws: TopChromeError.self) { try await session.setBehavior(.enterAlways, collapsibleHeight: .nan) }
        #expect(try await session.state().behavior == .revealAtTop, "a refused choice changes nothing")
        #expect(try await server.requests("PUT", Self.behavior) == 1, "a height that is not finite never leaves the app")
    }

    /// Pinned, two reports 30 points apart move nothing; once the service
    /// names `enterAlways`, the same reports move the chrome by 30 at once.
    @Test @MainActor func thePredictionTakesTheNewBehavior() async throws {
        let server = try TestServer()
        let session = try await server.client().createSession(inset: 59, behavior: .pinned)
        let chrome = RemoteTopChrome(session: session)
        chrome.start()
        defer { chrome.stop() }
        #expect(await eventually { chrome.inset == 59 && chrome.behavior == .pinned })
        chrome.report(contentOffsetY: -59, contentInsetTop: 59)
        chrome.report(contentOffsetY: -29, contentInsetTop: 59)
        #expect(chrome.heightOffset == 0)

        let changed = try await chrome.setBehavior(.enterAlways, collapsibleHeight: 44)
        #expect(changed.behavior == .enterAlways)
        #expect(await eventually { chrome.behavior == .enterAlways })
        chrome.report(contentOffsetY: -59, contentInsetTop: 59)
        chrome.report(contentOffsetY: -29, contentInsetTop: 59)
        #expect(chrome.heightOffset == -30, "predicted in the same frame, by the new behaviour")
        await chrome.suspend()
        #expect(try await session.state().heightOffset == -30, "and the service agrees")
    }
}
