import Foundation
import Testing
import TopChromeClient
import enum TopChromeCore.RevealBehavior
import struct TopChromeTesting.SplitMix

/// `RemoteTopChrome`'s prediction against the real server: what it shows
/// the moment a report is made equals what the service answers once it has
/// the report, and where the service says otherwise, the service wins.
@Suite(.timeLimit(.minutes(10))) struct PredictionLiveTests {
    /// What a view shows of the chrome; the height offset as the service
    /// keeps it (a Float), so a decimal written and read back compares equal.
    struct Shown: Equatable, CustomStringConvertible {
        var isRevealed: Bool
        var collapsedFraction: Double
        var heightOffset: Float

        @MainActor init(_ chrome: RemoteTopChrome) {
            isRevealed = chrome.isRevealed
            collapsedFraction = chrome.collapsedFraction
            heightOffset = Float(chrome.heightOffset)
        }

        init(_ state: SessionState) {
            isRevealed = state.isRevealed
            collapsedFraction = state.collapsedFraction
            heightOffset = Float(state.heightOffset)
        }

        var description: String { "revealed \(isRevealed), fraction \(collapsedFraction), offset \(heightOffset)" }
    }

    static let cases: [(RevealBehavior, snap: Bool)] = [
        (.revealAtTop, false), (.pinned, false), (.enterAlways, false), (.enterAlways, true),
        (.exitUntilCollapsed, false), (.exitUntilCollapsed, true),
    ]

    /// 60 frames of 1 to 6 reports each (a burst goes out as one batch):
    /// offsets across the page and past both ends, gestures that end, the
    /// bottom rubber band. After every frame, what the chrome showed at once
    /// equals the service's state once it has the frame's reports.
    @Test(arguments: cases) @MainActor func predictionEqualsTheAnswer(behavior: RevealBehavior, snap: Bool) async throws {
        let server = try TestServer()
        let session = try await server.client().createSession(inset: 59, behavior: behavior, collapsibleHeight: 44, snap: snap)
        let chrome = RemoteTopChrome(session: session)
        chrome.start()
        defer { chrome.stop() }
        #expect(await eventually { chrome.inset == 59 }, "the first state arrives")

        var random = SplitMix(seed: 25 + UInt64(Self.cases.firstIndex { $0 == (behavior, snap) } ?? 0))
        var offset = -59.0
        for frame in 0..<60 {
            for _ in 0..<Int.random(in: 1...6, using: &random) {
                offset = Int.random(in: 0..<8, using: &random) == 0 ? -59 : offset + Double.random(in: -90...120, using: &random)
                offset = min(max(offset, -120), 1_000)
                let ends = Bool.random(using: &random)
                chrome.report(contentOffsetY: offset, contentInsetTop: 59, phase: ends ? .ended : .changed,
                              contentHeight: 1_500, viewportHeight: 640)
            }
            let predicted = Shown(chrome)
            await chrome.suspend()
            let served = Shown(try await session.state())
            #expect(predicted == served, "frame \(frame) of \(behavior), snap \(snap): predicted \(predicted), served \(served)")
            if predicted != served { return }
        }
    }

    /// A report moves the chrome before anything reaches the service: with
    /// the service stopped, the island hides in the same frame.
    @Test @MainActor func aReportMovesTheChromeInTheSameFrame() async throws {
        let server = try TestServer()
        let session = try await server.client().createSession(inset: 59, behavior: .enterAlways)
        let chrome = RemoteTopChrome(session: session)
        chrome.start()
        defer { chrome.stop() }
        #expect(await eventually { chrome.inset == 59 })
        server.stop()
        chrome.report(contentOffsetY: -59, contentInsetTop: 59)
        chrome.report(contentOffsetY: -29, contentInsetTop: 59)
        #expect(chrome.heightOffset == -30)
        #expect(chrome.isRevealed, "half way, it has not flipped")
        chrome.report(contentOffsetY: 200, contentInsetTop: 59)
        #expect(chrome.collapsedFraction == 1 && !chrome.isRevealed)
    }

    /// Another device moves the session: the first device's chrome ends
    /// where the service says, not where its own reports left it.
    @Test @MainActor func anotherDevicesChangeWins() async throws {
        let server = try TestServer()
        let session = try await server.client().createSession(inset: 59, behavior: .enterAlways)
        let chrome = RemoteTopChrome(session: session)
        chrome.start()
        defer { chrome.stop() }
        #expect(await eventually { chrome.inset == 59 })
        chrome.report(contentOffsetY: -59, contentInsetTop: 59)
        chrome.report(contentOffsetY: 300, contentInsetTop: 59)
        #expect(!chrome.isRevealed)
        await chrome.suspend()

        // The other device's reports, numbered above this one's, and its inset.
        let other = server.client().session(id: session.id)
        try await other.setInset(47)
        await other.report(contentOffsetY: -47, contentInsetTop: 47)
        try await other.flush()
        let served = try await session.state()
        #expect(served.isRevealed && served.inset == 47)
        #expect(await eventually { chrome.isRevealed && chrome.inset == 47 }, "the service's state wins")
        #expect(Shown(chrome) == Shown(served))

        // And this device's next reports go on from the service's state
        // (from the top: the other device's last offset is not in the state).
        chrome.report(contentOffsetY: -47, contentInsetTop: 47)
        chrome.report(contentOffsetY: -27, contentInsetTop: 47)
        #expect(chrome.heightOffset == -20)
        let predicted = Shown(chrome)
        await chrome.suspend()
        let answer = try await session.state()
        #expect(predicted == Shown(answer), "predicted \(predicted), served \(answer)")
    }
}
