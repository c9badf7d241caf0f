import Foundation
import Testing
import TopChromeClient

/// The library against the real server: the README's walkthrough, bursts,
/// retries and refusals.
@Suite(.timeLimit(.minutes(10))) struct ChromeSessionLiveTests {
    static let scroll = "/v1/sessions/{id}/scroll"

    @Test func walkthrough() async throws {
        let server = try TestServer()
        let client = server.client()
        let session = try await client.createSession(inset: 59)
        #expect(try await session.state() == SessionState(id: session.id, inset: 59, isRevealed: true, version: 1))

        await session.report(contentOffsetY: 240, contentInsetTop: 59)
        try await session.flush()
        #expect(try await session.state().isRevealed == false, "far down hides the island")

        let sentBefore = try await server.requests("POST", Self.scroll)
        await session.report(contentOffsetY: 0, axis: .horizontal)
        try await session.flush()
        #expect(try await session.state() == SessionState(id: session.id, inset: 59, isRevealed: false, version: 2, lastSeq: 1))
        #expect(try await server.requests("POST", Self.scroll) == sentBefore, "horizontal reports are not sent")

        #expect(try await session.setInset(47).inset == 47)
        // Queued in this order, applied in this order: the report hides, the
        // disappearance reveals; the next report hides again before the inset.
        await session.report(contentOffsetY: 500, contentInsetTop: 47)
        #expect(try await session.disappear().isRevealed == true)
        #expect(try await session.state().isRevealed == true)
        await session.report(contentOffsetY: 500, contentInsetTop: 47)
        let afterInset = try await session.setInset(40)
        #expect(afterInset.isRevealed == false && afterInset.inset == 40)
        #expect(try await session.state() == afterInset)

        let same = client.session(id: session.id)
        #expect(try await same.state() == afterInset)

        try await session.delete()
        await #expect(throws: TopChromeError.sessionGone(id: session.id)) { try await same.state() }
        await #expect(throws: TopChromeError.sessionGone(id: session.id)) { try await session.setInset(1) }
        try await session.delete()  // already gone counts as deleted
    }

    /// 1,000 reports as fast as a scroll view makes them: tens of requests
    /// at most, and the state of the last report.
    @Test func burstOfReportsCostsTensOfRequests() async throws {
        let server = try TestServer()
        let session = try await server.client().createSession(inset: 59)
        for index in 0..<1000 {
            // Alternating top and far down; the last one is far down.
            await session.report(contentOffsetY: index % 2 == 0 ? -59 : 600, contentInsetTop: 59)
        }
        try await session.flush()
        let state = try await session.state()
        #expect(state.isRevealed == false, "the last report wins")
        let requests = try await server.requests("POST", Self.scroll)
        #expect((1...20).contains(requests), "\(requests) requests for 1,000 reports")
    }

    /// A session attached again (an app relaunched) is not ignored as stale
    /// against the seq numbers the first client used.
    @Test func attachedSessionReportsAreNotStale() async throws {
        let server = try TestServer()
        let first = try await server.client().createSession(inset: 59)
        await first.report(contentOffsetY: 600, contentInsetTop: 59)
        try await first.flush()

        let again = server.client().session(id: first.id)
        await again.report(contentOffsetY: -59, contentInsetTop: 59)
        try await again.flush()
        #expect(try await again.state().isRevealed == true)
    }

    @Test func unknownSessionEndsQueueAndStream() async throws {
        let server = try TestServer()
        let session = server.client().session(id: String(repeating: "0", count: 32))
        let gone = TopChromeError.sessionGone(id: session.id)
        await session.report(contentOffsetY: 10)
        await #expect(throws: gone) { try await session.flush() }
        await #expect(throws: gone) { try await session.disappear() }
        let recorder = StateRecorder(server.client().session(id: session.id).states())
        let end = await recorder.waitForEnd()
        #expect(throws: gone) { try end?.get() }
    }

    /// A 400 is the caller's mistake: it surfaces with the problem at once,
    /// after one request.
    @Test func badRequestIsNotRetried() async throws {
        let server = try TestServer()
        let session = try await server.client().createSession()
        do {
            try await session.setInset(20_000)
            Issue.record("an inset over 10000 was accepted")
        } catch let TopChromeError.rejected(problem) {
            #expect(problem.status == 400)
            #expect(problem.detail?.contains("inset") == true, "\(problem)")
        }
        #expect(try await server.requests("PUT", "/v1/sessions/{id}/inset", status: 400) == 1)

        // A report that cannot be sent (not finite) surfaces at the next
        // flush, once, and is never sent.
        await session.report(contentOffsetY: .infinity)
        await #expect(throws: TopChromeError.self) { try await session.flush() }
        try await session.flush()
        #expect(try await server.requests("POST", Self.scroll) == 0)
    }

    /// A full server answers 503 with Retry-After; once a slot is free the
    /// retried create succeeds.
    @Test func serviceUnavailableIsRetried() async throws {
        let server = try TestServer { $0.limits.maxSessions = 1 }
        let client = server.client()
        let occupant = try await client.createSession()
        let waiting = Task { try await client.createSession(inset: 12) }
        #expect(try await eventually { try await server.requests("POST", "/v1/sessions", status: 503) >= 1 })
        try await occupant.delete()
        let created = try await within { try await waiting.value }
        #expect(try await created.state().inset == 12)
    }

    /// `Retry-After` sets the smallest wait between tries (here capped at
    /// 0.3 s by the client's policy; the server asks for 30 s): three retries
    /// cannot be done sooner, and after the last one the 503 surfaces.
    @Test func retryAfterIsHonoured() async throws {
        let server = try TestServer { $0.limits.maxSessions = 1 }
        _ = try await server.client().createSession()
        let client = server.client {
            $0.retry = RetryPolicy(initialDelay: 0.001, maximumDelay: 0.001, maximumAttempts: 4, maximumRetryAfter: 0.3)
        }
        let started = Date()
        do {
            _ = try await client.createSession()
            Issue.record("created a session beyond --max-sessions")
        } catch let TopChromeError.unavailable(problem) {
            #expect(problem.status == 503)
        }
        #expect(Date().timeIntervalSince(started) >= 0.9)
        #expect(try await server.requests("POST", "/v1/sessions", status: 503) == 4)
    }
}
