import Testing
import TopChromeClient
import TopChromeCore

/// `RemoteTopChrome.local(_:)`: the object an app's views observe, driven in
/// memory with no service, for SwiftUI previews and an app's unit tests
/// (issue 37 item 11).
@Suite(.timeLimit(.minutes(10))) @MainActor struct LocalChromeTests {
    static let id = String(repeating: "c", count: 32)

    @Test func showsAHiddenIslandAndFollowsWithoutANetwork() async throws {
        let chrome = RemoteTopChrome.local(SessionState(id: Self.id, inset: 59, isRevealed: false, version: 1))
        #expect(!chrome.isRevealed && chrome.inset == 59 && chrome.collapsedFraction == 1)
        let following = Task { await chrome.follow() }
        #expect(await eventually { chrome.connection == .live })
        // Asked of a service, `local.invalid` would not resolve: answered here.
        #expect(try await chrome.state().isRevealed == false)
        #expect(chrome.lastError == nil)
        following.cancel()
        await following.value
        #expect(chrome.connection == .stopped)
    }

    /// Reports move it as the service's rules do, each answered as a new version.
    @Test func reportsMoveItByTheServicesRules() async throws {
        let chrome = RemoteTopChrome.local(SessionState(id: Self.id, inset: 59, isRevealed: true, version: 1,
                                                        behavior: .enterAlways))
        var expected = ChromeState(inset: 59, settings: RevealSettings(behavior: .enterAlways))
        let rules = ChromeRules()
        for offset in [-59.0, -20, 0, 30, 10] {
            chrome.report(contentOffsetY: offset, contentInsetTop: 59)
            expected = rules.apply(.scroll(ScrollReport(contentOffsetY: offset, contentInsetTop: 59)), to: expected)
            #expect(chrome.heightOffset == Double(expected.heightOffset), "at \(offset)")
            #expect(chrome.collapsedFraction == expected.collapsedFraction, "at \(offset)")
            #expect(chrome.isRevealed == expected.isRevealed, "at \(offset)")
        }
        #expect(chrome.heightOffset < 0, "scrolled down, the chrome moved up")
        #expect(try await chrome.state().version == expected.version)
        chrome.disappear()
        #expect(chrome.isRevealed && chrome.heightOffset == 0)
    }

    /// A state another device made, played with `receive`: shown, and later
    /// changes start from it.
    @Test func aReceivedStateIsShownAndBuiltOn() async throws {
        let chrome = RemoteTopChrome.local()
        chrome.receive(SessionState(id: "local", inset: 40, isRevealed: false, version: 7))
        #expect(!chrome.isRevealed && chrome.inset == 40)
        chrome.report(contentOffsetY: -40, contentInsetTop: 40)
        #expect(chrome.isRevealed)
        #expect(try await chrome.state().version == 8)
    }

    /// Changes are answered, and refused as the service refuses them,
    /// changing nothing; a report it would refuse is counted as lost.
    @Test func changesAreAnsweredAndRefusedAsByTheService() async throws {
        let chrome = RemoteTopChrome.local()
        #expect(try await chrome.setInset(40).inset == 40)
        #expect(chrome.inset == 40)
        await #expect { try await chrome.setInset(20_000) } throws: { error in
            guard case let .rejected(problem) = error as? TopChromeError else { return false }
            return problem.status == 400
        }
        let behavior = try await chrome.setBehavior(.exitUntilCollapsed, collapsibleHeight: 30, snap: true)
        #expect(behavior.behavior == .exitUntilCollapsed && behavior.collapsibleHeight == 30 && behavior.snap)
        await #expect { try await chrome.setBehavior(.pinned, collapsibleHeight: -1) } throws: { error in
            guard case let .rejected(problem) = error as? TopChromeError else { return false }
            return problem.status == 400
        }
        #expect(chrome.behavior == .exitUntilCollapsed && chrome.inset == 40)
        chrome.report(contentOffsetY: .nan, contentInsetTop: 40)
        #expect(chrome.reportsLost == 1)
        guard case .invalidValue? = chrome.lastReportError else {
            Issue.record("not told as an invalid value: \(String(describing: chrome.lastReportError))")
            return
        }
        #expect(chrome.isRevealed)
    }

    /// Deleted, it is gone as a service's session is: following ends.
    @Test func deletingEndsFollowing() async throws {
        let chrome = RemoteTopChrome.local(SessionState(id: Self.id, inset: 59, isRevealed: true, version: 1))
        let following = Task { await chrome.follow() }
        #expect(await eventually { chrome.connection == .live })
        try await chrome.delete()
        await following.value
        #expect(chrome.connection == .stopped)
        #expect(chrome.lastError == .sessionGone(id: Self.id))
        await #expect(throws: TopChromeError.sessionGone(id: Self.id)) { try await chrome.state() }
    }

    /// A preview of the app's offline banner.
    @Test func aSimulatedConnectionIsShown() {
        let chrome = RemoteTopChrome.local()
        chrome.simulate(connection: .retrying(after: 4), lastError: .transport("offline"))
        #expect(chrome.connection == .retrying(after: 4))
        #expect(chrome.lastError == .transport("offline"))
    }
}
