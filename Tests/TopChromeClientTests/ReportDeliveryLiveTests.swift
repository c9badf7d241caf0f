import Foundation
import Testing
import TopChromeClient
import struct TopChromeCore.ScrollReport

/// Reports as the issue of lost reports found them (issue 37): fractional
/// offsets with a phase (some 90 bytes a report), bodies over the service's
/// limit, outages, and failures that must show and then clear. Live against
/// the real server.
@Suite(.timeLimit(.minutes(10))) struct ReportDeliveryLiveTests {
    static let scroll = "/v1/sessions/{id}/scroll"

    /// A finger's path as a scroll view reports it: fractional offsets,
    /// gestures that end (for snapping), the bottom rubber band's heights.
    static func offset(_ frame: Int) -> Double {
        -59 + 420 * (1 - cos(Double(frame) / 37)) + Double(frame % 7) * 0.333_333_3
    }

    static func phase(_ frame: Int) -> ScrollReport.Phase {
        frame % 90 == 89 ? .ended : .changed
    }

    /// 1,000 fractional reports at once are more than one body of the
    /// default 64 KiB can hold: they go in batches below it, and all arrive.
    @Test func aBurstOfFractionalReportsAllArrive() async throws {
        let server = try TestServer()
        let session = try await server.client().createSession(inset: 59, behavior: .enterAlways, collapsibleHeight: 44, snap: true)
        var last: UInt64?
        for frame in 0..<1000 {
            last = await session.report(contentOffsetY: Self.offset(frame), contentInsetTop: 59, phase: Self.phase(frame),
                                        contentHeight: 2_000.5, viewportHeight: 640.25)
        }
        try await session.flush()
        #expect(try await session.state().lastSeq == last, "every report arrived")
        #expect(try await server.requests("POST", Self.scroll, status: 413) == 0, "no batch over the limit was sent")
    }

    /// A service whose limit is below the client's: the 413 names it, the
    /// refused batch goes again in halves, and nothing is lost.
    @Test func aBatchTheServiceFindsTooLargeIsSentInHalves() async throws {
        let server = try TestServer { $0.limits.maxBodyBytes = 4096 }
        let session = try await server.client().createSession(inset: 59, behavior: .enterAlways)
        var last: UInt64?
        for frame in 0..<300 {
            last = await session.report(contentOffsetY: Self.offset(frame), contentInsetTop: 59, phase: Self.phase(frame))
        }
        try await session.flush()
        #expect(try await session.state().lastSeq == last, "every report arrived")
        #expect(try await server.requests("POST", Self.scroll, status: 413) >= 1, "the limit was met and learnt")
        // Learnt: the next burst goes in bodies that fit.
        let refused = try await server.requests("POST", Self.scroll, status: 413)
        for frame in 300..<600 {
            last = await session.report(contentOffsetY: Self.offset(frame), contentInsetTop: 59, phase: Self.phase(frame))
        }
        try await session.flush()
        #expect(try await session.state().lastSeq == last)
        #expect(try await server.requests("POST", Self.scroll, status: 413) == refused, "no second refusal")
    }

    /// The drill: a gesture at 120 Hz with fractional offsets through a 10 s
    /// outage. Once the service is back, its `lastSeq` is the last report's,
    /// the mirror equals the service, and no report was lost.
    @Test @MainActor func aGestureThroughATenSecondOutageArrivesWhole() async throws {
        try await Self.drill(outage: 10)
    }

    /// The same drill through 60 s, when `TOPCHROME_SLOW_DRILLS` is set.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["TOPCHROME_SLOW_DRILLS"] != nil), .timeLimit(.minutes(3)))
    @MainActor func aGestureThroughASixtySecondOutageArrivesWhole() async throws {
        try await Self.drill(outage: 60)
    }

    @MainActor static func drill(outage seconds: Double) async throws {
        let folder = try StateFolder()
        let server = try TestServer { $0.stateFile.path = folder.stateFile }
        let chrome = RemoteTopChrome(session: try await server.client { $0.reportRetention = 120 }.createSession(
            inset: 59, behavior: .enterAlways, collapsibleHeight: 44, snap: true))
        chrome.start()
        defer { chrome.stop() }
        #expect(await eventually { chrome.connection == .live && chrome.inset == 59 })

        server.stop()
        let frames = Int(seconds * 120)
        for frame in 0..<frames {
            chrome.report(contentOffsetY: offset(frame), contentInsetTop: 59, phase: phase(frame),
                          contentHeight: 2_000.5, viewportHeight: 640.25)
            try await Task.sleep(nanoseconds: 8_333_333)
        }
        let back = ContinuousClock.now
        try server.start()
        try await within(60) { @MainActor in try await chrome.flush() }
        let served = try await chrome.state()
        print("outage of \(seconds) s: \(frames) reports; all sent \(ContinuousClock.now - back) after the server came back; lost \(chrome.reportsLost)")
        #expect(served.lastSeq == UInt64(frames), "the service applied every report, the last one last")
        #expect(chrome.reportsLost == 0 && chrome.lastReportError == nil)
        #expect(await eventually { PredictionLiveTests.Shown(chrome) == PredictionLiveTests.Shown(served) },
                "the mirror equals the service: \(PredictionLiveTests.Shown(chrome)) against \(PredictionLiveTests.Shown(served))")
    }

    /// More reports wait than the client keeps: the oldest go, counted,
    /// and the rest arrive in order once the service is back.
    @Test @MainActor func reportsBeyondTheBoundAreDroppedOldestFirstAndCounted() async throws {
        let folder = try StateFolder()
        let server = try TestServer { $0.stateFile.path = folder.stateFile }
        let session = try await server.client { $0.maximumQueuedReports = 100; $0.reportRetention = 120 }.createSession(inset: 59)
        let chrome = RemoteTopChrome(session: session)
        server.stop()
        for frame in 0..<150 {
            chrome.report(contentOffsetY: Self.offset(frame), contentInsetTop: 59)
        }
        #expect(await eventually { chrome.reportsLost == 50 }, "\(chrome.reportsLost) lost")
        guard case .reportsDropped? = chrome.lastReportError else {
            Issue.record("told \(String(describing: chrome.lastReportError))")
            return
        }
        try server.start()
        await #expect(throws: TopChromeError.self, "flush tells of the drop") { try await chrome.flush() }
        try await chrome.flush()
        let lastSeq = try await chrome.state().lastSeq
        #expect(lastSeq == 150, "the newest arrived, the last one last: lastSeq \(String(describing: lastSeq))")
        #expect(chrome.reportsLost == 50)
    }

    /// A report that failed for good leaves the prediction: the mirror goes
    /// back to the service's state instead of showing a move the service
    /// never saw. The failure shows in `lastReportError` (not in
    /// `lastError`, which the reconnection clears) until a report arrives.
    @Test @MainActor func aReportThatFailedForGoodLeavesTheMirror() async throws {
        let folder = try StateFolder()
        let server = try TestServer { $0.stateFile.path = folder.stateFile }
        let session = try await server.client { $0.reportRetention = 0.3 }.createSession(inset: 59)
        let chrome = RemoteTopChrome(session: session)
        chrome.start()
        defer { chrome.stop() }
        #expect(await eventually { chrome.connection == .live && chrome.inset == 59 })

        server.stop()
        chrome.report(contentOffsetY: 300, contentInsetTop: 59)
        #expect(!chrome.isRevealed, "predicted at once")
        #expect(await eventually { chrome.reportsLost == 1 }, "given up after reportRetention")
        #expect(chrome.isRevealed, "the lost report left the prediction")
        await #expect(throws: TopChromeError.self, "flush tells of the loss") { try await chrome.flush() }
        guard case .transport? = chrome.lastReportError else {
            Issue.record("told \(String(describing: chrome.lastReportError))")
            return
        }

        try server.start()
        #expect(await eventually { chrome.connection == .live })
        #expect(chrome.lastError == nil)
        #expect(chrome.lastReportError != nil, "a reconnection does not erase a lost report")
        let served = try await chrome.state()
        #expect(served.isRevealed && PredictionLiveTests.Shown(chrome) == PredictionLiveTests.Shown(served))

        chrome.report(contentOffsetY: 300, contentInsetTop: 59)
        try await chrome.flush()
        #expect(await eventually { chrome.lastReportError == nil }, "cleared when a report arrives")
        #expect(chrome.reportsLost == 1)
    }

    /// A report lost while nobody follows still counts and shows.
    @Test @MainActor func aReportLostWhileNotFollowingIsCounted() async throws {
        let server = try TestServer()
        let session = try await server.client { $0.reportRetention = 0.2 }.createSession(inset: 59)
        let chrome = RemoteTopChrome(session: session)
        server.stop()
        chrome.report(contentOffsetY: 300, contentInsetTop: 59)
        #expect(await eventually { chrome.reportsLost == 1 && chrome.lastReportError != nil })
    }

    /// Every change a `RemoteTopChrome` makes reaches the service in the
    /// order it was made: an inset, a read, a delete after the reports before them.
    @Test @MainActor func changesGoInTheOrderTheyWereMade() async throws {
        let server = try TestServer()
        for trial in 0..<10 {
            let chrome = RemoteTopChrome(session: try await server.client().createSession(inset: 59))
            chrome.report(contentOffsetY: 300.5, contentInsetTop: 59)
            #expect(try await chrome.setInset(47).lastSeq == 1, "trial \(trial): the report went before the inset")
            chrome.report(contentOffsetY: 310.5, contentInsetTop: 47)
            #expect(try await chrome.state().lastSeq == 2, "trial \(trial): the read came after the report")
            chrome.report(contentOffsetY: 320.5, contentInsetTop: 47)
            try await chrome.delete()
        }
        #expect(try await server.requests("POST", Self.scroll, status: 404) == 0, "no report came after its session's delete")
        #expect(try await server.requests("POST", Self.scroll, status: 200) == 30)
    }
}

/// A temporary folder for a server's state file, so it can stop and start
/// again with its sessions.
final class StateFolder {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("client-\(UUID().uuidString)")
    var stateFile: String { url.appendingPathComponent("state.jsonl").path }

    init() throws {
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }
}
