import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import TopChromeClient

/// What an app developer relies on (issue 24): visible state, cancellation,
/// reconnect pacing, seq across relaunches and clock steps, request pacing,
/// encoded bodies. Live against the real server wherever it is HTTP.
@Suite(.timeLimit(.minutes(10))) struct AppDeveloperTests {
    static let scroll = "/v1/sessions/{id}/scroll"

    // MARK: Request pacing

    /// 1,000 reports as fast as a scroll view makes them: ≤ 20 requests.
    @Test func aBurstOf1000ReportsCostsAtMost20Requests() async throws {
        let server = try TestServer()
        let session = try await server.client().createSession(inset: 59)
        for index in 0..<1000 {
            await session.report(contentOffsetY: index % 2 == 0 ? -59 : 600, contentInsetTop: 59)
        }
        try await session.flush()
        #expect(try await session.state().isRevealed == false, "the last report wins")
        let requests = try await server.requests("POST", Self.scroll)
        print("burst: \(requests) requests for 1,000 reports")
        #expect((1...20).contains(requests), "\(requests) requests for 1,000 reports")
    }

    /// A report the service would refuse (a NaN from a division by zero)
    /// is refused on its own: the reports waiting with it still arrive.
    @Test func aNonFiniteReportDoesNotTakeItsBatchDown() async throws {
        let server = try TestServer()
        let session = try await server.client().createSession(inset: 59)
        await session.report(contentOffsetY: -59, contentInsetTop: 59)
        let refused = await session.report(contentOffsetY: .nan, contentInsetTop: 59)
        let negative = await session.report(contentOffsetY: 10, contentInsetTop: 59, contentHeight: -1)
        let last = await session.report(contentOffsetY: 600, contentInsetTop: 59)
        #expect(refused == nil && negative == nil)
        try? await session.flush()
        let state = try await session.state()
        #expect(state.lastSeq == last && !state.isRevealed, "the report after the refused ones arrived: \(state)")
    }

    /// Steady 120 Hz scrolling: ≤ 25 requests per second of it, counted at
    /// the server (the interval, not the round trip, sets the pace).
    @Test func steadyScrollingAt120HzCostsAtMost25RequestsASecond() async throws {
        let server = try TestServer()
        let session = try await server.client().createSession(inset: 59)
        let started = ContinuousClock.now
        for frame in 0..<240 {
            await session.report(contentOffsetY: frame % 2 == 0 ? -59 : 600, contentInsetTop: 59)
            try await Task.sleep(nanoseconds: 8_333_333)
        }
        let elapsed = ContinuousClock.now - started
        try await session.flush()
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let requests = try await server.requests("POST", Self.scroll)
        print("steady 120 Hz: \(requests) requests in \(seconds) s = \(Double(requests) / seconds) per second")
        #expect(requests >= 2)
        #expect(Double(requests) <= 25 * max(seconds, 1), "\(requests) requests in \(seconds) s")
    }

    // MARK: Cancellation

    /// `state()` behind a report that retries (the server is away) returns
    /// as soon as its task is cancelled, and so does `flush()`.
    @Test func waitingMethodsStopWhenCancelled() async throws {
        let server = try TestServer()
        let session = try await server.client {
            $0.retry = RetryPolicy(initialDelay: 0.5, maximumDelay: 1, maximumAttempts: 1000, maximumRetryAfter: 1)
            // Kept longer than a busy run may hold the test up: given up, the
            // report would end the flush before the cancel does.
            $0.reportRetention = 3600
        }.createSession(inset: 59)
        server.stop()
        await session.report(contentOffsetY: 600, contentInsetTop: 59)
        let read = Task { try await session.state() }
        let flush = Task { try await session.flush() }
        try await Task.sleep(nanoseconds: 200_000_000)
        read.cancel()
        flush.cancel()
        let readEnd = try await within(5) { await read.result }
        let flushEnd = try await within(5) { await flush.result }
        #expect(throws: CancellationError.self) { try readEnd.get() }
        #expect(throws: CancellationError.self) { try flushEnd.get() }
    }

    /// `flush()` waits for what was queued before it, not for reports that
    /// keep coming after it.
    @Test func flushWaitsOnlyForWhatWasQueuedBefore() async throws {
        let server = try TestServer()
        let session = try await server.client().createSession(inset: 59)
        await session.report(contentOffsetY: 600, contentInsetTop: 59)
        let scrolling = Task {
            var frame = 0
            while !Task.isCancelled {
                frame += 1
                await session.report(contentOffsetY: Double(frame % 700), contentInsetTop: 59)
                await Task.yield()
            }
        }
        defer { scrolling.cancel() }
        try await within(10) { try await session.flush() }
    }

    // MARK: Reconnect pacing

    /// A captive portal answers every stream with 200 text/html and closes:
    /// each answer counts as a failure and the backoff grows (it used to
    /// start again at every 200, a reconnection every 0–250 ms forever).
    @Test func aCaptivePortalIsRetriedEverMoreSlowly() async throws {
        let portal = try ClosingEventServer(contentType: "text/html; charset=utf-8")
        defer { portal.stop() }
        var configuration = ChromeService.Configuration()
        configuration.retry = RetryPolicy(initialDelay: 0.05, maximumDelay: 10)
        let client = ChromeService(baseURL: URL(string: "http://127.0.0.1:\(portal.port)")!, bearerToken: nil,
                                     configuration: configuration)
        let events = ConnectionEvents(), waits = Waits()
        let recorder = StateRecorder(client.session(id: String(repeating: "1", count: 32))
            .states(onConnection: events.append, onWait: waits.append))
        // Until a wait went beyond the first delay, however long a loaded
        // machine takes to get there: a backoff that starts again at every
        // answer never does.
        #expect(await eventually { waits.grew(from: 0.05) }, "\(waits.all)")
        recorder.cancel()
        let delays = waits.all
        print("captive portal: \(portal.connections) connections, waits \(delays)")
        #expect(Waits.withinCeilings(delays, from: 0.05), "\(delays)")
        #expect(portal.connections >= delays.count, "every wait followed an answer")
        #expect(Array(events.failedAttempts.prefix(delays.count)) == Array(1...delays.count), "\(events.all)")
        #expect(events.all.contains { $0 == .connected } == false, "an HTML page is no open stream")
        #expect(events.all.allSatisfy {
            if case .interrupted(.malformedResponse, _) = $0 { true } else { false }
        }, "\(events.all)")
        #expect(recorder.states.isEmpty)
    }

    /// A stream that opens and is closed at once, again and again, does not
    /// reset the backoff: only one that stayed up `stableConnectionInterval` does.
    @Test func backoffResetsOnlyAfterAStableConnection() async throws {
        let server = try ClosingEventServer()
        defer { server.stop() }
        var configuration = ChromeService.Configuration()
        configuration.retry = RetryPolicy(initialDelay: 0.05, maximumDelay: 10)
        let client = ChromeService(baseURL: URL(string: "http://127.0.0.1:\(server.port)")!, bearerToken: nil,
                                     configuration: configuration)
        // `retry: 10` (ms) from the server sets the first delay; it grows from there.
        let waits = Waits()
        let recorder = StateRecorder(client.session(id: String(repeating: "1", count: 32))
            .states(onConnection: { _ in }, onWait: waits.append))
        #expect(await eventually { waits.grew(from: 0.01) }, "\(waits.all)")
        recorder.cancel()
        let delays = waits.all
        #expect(Waits.withinCeilings(delays, from: 0.01), "\(delays)")
        #expect(server.connections >= delays.count, "every wait followed a stream")
    }

    // MARK: seq

    /// An earlier life of the session numbered its reports from a clock that
    /// was later stepped back an hour: the new client's reports are noticed
    /// as stale (TopChrome-Stale-Reports), numbered above the state's
    /// `lastSeq` and applied, not ignored forever.
    @Test func reportsAfterAClockStepBackAreApplied() async throws {
        let server = try TestServer()
        let first = try await server.client().createSession(inset: 59)
        let earlier = UInt64((Date().timeIntervalSince1970 + 3600) * 1_000_000)
        var request = URLRequest(url: server.url.appendingPathComponent("v1/sessions/\(first.id)/scroll"))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(#"{"contentOffsetY": 600, "contentInsetTop": 59, "seq": \#(earlier)}"#.utf8)
        let (_, response) = try await URLSession.shared.data(for: request)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)

        let log = Log()
        let again = server.client { $0.log = log.add }.session(id: first.id)
        await again.report(contentOffsetY: -59, contentInsetTop: 59)
        try await again.flush()
        let state = try await again.state()
        #expect(state.isRevealed == true, "the report was applied")
        #expect(state.lastSeq == earlier + 1)
        #expect(log.lines.contains { $0.contains("stale") }, "\(log.lines)")
        // And the next report goes on above it, applied at once.
        await again.report(contentOffsetY: 600, contentInsetTop: 59)
        try await again.flush()
        #expect(try await again.state().isRevealed == false)
        #expect(try await server.requests("POST", Self.scroll) == 4, "one resend, no more")
    }

    // MARK: Bodies

    /// Non-finite numbers are refused before anything is sent.
    @Test func nonFiniteNumbersAreNeverSent() async throws {
        let server = try TestServer()
        let session = try await server.client().createSession()
        await #expect(throws: TopChromeError.invalidValue("inset nan is not finite")) { try await session.setInset(.nan) }
        await session.report(contentOffsetY: .nan)
        await #expect(throws: TopChromeError.self) { try await session.flush() }
        await session.report(contentOffsetY: .infinity)
        await #expect(throws: TopChromeError.self) { try await session.flush() }
        #expect(try await server.requests("POST", Self.scroll) == 0)
        #expect(try await server.requests("PUT", "/v1/sessions/{id}/inset") == 0)
    }

    // MARK: Tokens

    /// A token provider is asked before every request, so a rotated token
    /// is used from the next one on; one the service refuses as invalid is
    /// asked for again and the request sent once more.
    @Test func aTokenProviderIsAskedForEachRequest() async throws {
        let server = try TestServer { $0.auth.token = "right" }
        let tokens = Log()
        let client = ChromeService(baseURL: server.url) {
            tokens.add("asked")
            return tokens.lines.count == 1 ? "wrong" : "right"
        }
        let session = try await client.createSession(inset: 3)
        #expect(tokens.lines.count == 2, "refused, asked again")
        #expect(try await session.state().inset == 3)
        #expect(tokens.lines.count == 3)
    }

    /// A provider that keeps giving a refused token: the refusal is told,
    /// after one more try, not retried for ever.
    @Test func aTokenRefusedAgainIsTold() async throws {
        let server = try TestServer { $0.auth.token = "right" }
        let tokens = Log()
        let client = ChromeService(baseURL: server.url) {
            tokens.add("asked")
            return "wrong"
        }
        await #expect(throws: TopChromeError.self) { _ = try await client.createSession() }
        #expect(tokens.lines.count == 2)
    }
}

/// `RemoteTopChrome`'s visible state, live.
@Suite(.timeLimit(.minutes(10))) struct RemoteTopChromeStateTests {
    /// connecting → live; the server away → retrying with the error;
    /// back → live with no error.
    @Test @MainActor func connectionIsVisible() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("client-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try TestServer { $0.stateFile.path = folder.appendingPathComponent("state.jsonl").path }
        let chrome = RemoteTopChrome(session: try await server.client().createSession(inset: 59))
        #expect(chrome.connection == .stopped)
        let following = Task { await chrome.follow() }
        #expect(await eventually { chrome.connection == .live && chrome.inset == 59 })
        #expect(chrome.lastError == nil)

        server.stop()
        #expect(await eventually { if case .retrying = chrome.connection { true } else { false } }, "\(chrome.connection)")
        #expect(await eventually { chrome.lastError != nil }, "the failed attempts say why")
        try server.start()
        #expect(await eventually { chrome.connection == .live }, "\(chrome.connection)")
        #expect(chrome.lastError == nil)

        following.cancel()
        _ = try await within(5) { await following.value }
        #expect(chrome.connection == .stopped, "follow() returns when cancelled")
    }

    /// A session that is gone (expired, deleted) stops the mirror with
    /// `lastError` saying so; `onSessionGone` hands it a fresh one to follow.
    @Test @MainActor func aGoneSessionIsVisibleAndReplaceable() async throws {
        let server = try TestServer()
        let client = server.client()
        let session = try await client.createSession(inset: 59)
        try await client.session(id: session.id).delete()  // as the idle TTL would

        let chrome = RemoteTopChrome(session: session)
        let following = Task { await chrome.follow() }
        _ = try await within(10) { await following.value }
        #expect(chrome.connection == .stopped)
        #expect(chrome.lastError == .sessionGone(id: session.id))

        let replacement = try await client.createSession(inset: 40)
        chrome.onSessionGone = { replacement }
        let again = Task { await chrome.follow() }
        defer { again.cancel() }
        #expect(await eventually { chrome.connection == .live && chrome.inset == 40 }, "\(chrome.connection)")
        #expect(chrome.session === replacement)
        #expect(chrome.lastError == nil)
        chrome.report(contentOffsetY: 500, contentInsetTop: 40)
        #expect(await eventually { !chrome.isRevealed }, "reports go to the new session")
    }

    /// A 401 stops the mirror with the refusal in `lastError`.
    @Test @MainActor func aRefusalIsVisible() async throws {
        let server = try TestServer { $0.auth.token = "right" }
        let session = try await ChromeService(baseURL: server.url, bearerToken: "right").createSession()
        let wrong = ChromeService(baseURL: server.url, bearerToken: "wrong").session(id: session.id)
        let chrome = RemoteTopChrome(session: wrong)
        // One refused request, but `follow()` runs on the main actor, which
        // the other main-actor tests share, starting and stopping their
        // servers on it synchronously: as generous a bound as `eventually`'s.
        _ = try await within(30) { await chrome.follow() }
        #expect(chrome.connection == .stopped)
        if case let .rejected(problem)? = chrome.lastError {
            #expect(problem.status == 401)
        } else {
            Issue.record("\(String(describing: chrome.lastError))")
        }
    }

    /// `suspend()` sends what is queued and returns when it is sent.
    @Test @MainActor func suspendFlushesWhatIsQueued() async throws {
        let server = try TestServer()
        let session = try await server.client().createSession(inset: 59)
        let chrome = RemoteTopChrome(session: session)
        chrome.report(contentOffsetY: 600, contentInsetTop: 59)
        await chrome.suspend()
        #expect(try await server.requests("POST", AppDeveloperTests.scroll) == 1)
        #expect(try await session.state().isRevealed == false)
    }
}

/// Lines a hook was given.
final class Log: @unchecked Sendable {
    private let lock = NSLock()
    private var kept: [String] = []
    func add(_ line: String) { lock.withLock { kept.append(line) } }
    var lines: [String] { lock.withLock { kept } }
}

/// The delays a stream chose before each reconnection, in order.
final class Waits: @unchecked Sendable {
    private let lock = NSLock()
    private var delays: [Double] = []
    func append(_ delay: Double) { lock.withLock { delays.append(delay) } }
    var all: [Double] { lock.withLock { delays } }

    /// A wait after the first reached the first delay: the ceiling it is
    /// drawn under (full jitter) has doubled at least once.
    func grew(from first: Double) -> Bool {
        all.dropFirst().contains { $0 >= first }
    }

    /// Each wait under its own retry's ceiling, the first delay doubled
    /// once a retry: a wait over it would be no backoff at all.
    static func withinCeilings(_ delays: [Double], from first: Double) -> Bool {
        delays.enumerated().allSatisfy { retry, delay in delay <= first * Double(1 << min(retry, 30)) }
    }
}
