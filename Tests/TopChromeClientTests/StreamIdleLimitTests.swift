import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import TopChromeClient

/// The event stream's idle limit learned from the service (issue 37 item 4):
/// the service names its heartbeat on the stream, and the client takes
/// twice it, unless the app chose its own.
@Suite(.timeLimit(.minutes(10))) struct StreamIdleLimitTests {
    @Test func twiceTheNamedHeartbeatUnlessTheAppChoseOne() {
        #expect(StreamIdleLimit.seconds(configured: nil, heartbeat: 4) == 8)
        #expect(StreamIdleLimit.seconds(configured: nil, heartbeat: nil) == 30, "twice the service's default until it names one")
        #expect(StreamIdleLimit.seconds(configured: 90, heartbeat: 4) == 90)
        #expect(StreamIdleLimit.seconds(configured: .infinity, heartbeat: 4) == .infinity)
    }

    @Test func onlyAWholePositiveNumberNamesAHeartbeat() {
        #expect(StreamIdleLimit.heartbeat(header: "15") == 15)
        #expect(StreamIdleLimit.heartbeat(header: " 7 ") == 7)
        for header in [nil, "", "0", "-3", "1.5", "soon"] {
            #expect(StreamIdleLimit.heartbeat(header: header) == nil, "\(String(describing: header))")
        }
    }

    /// The stream's head names the server's `--heartbeat`, on GET and HEAD.
    @Test func theStreamNamesTheServersHeartbeat() async throws {
        let server = try TestServer { $0.sessions.heartbeatSeconds = 7 }
        let session = try await server.client().createSession()
        var request = URLRequest(url: server.url.appendingPathComponent("v1/sessions/\(session.id)/events"))
        request.httpMethod = "HEAD"
        let (_, response) = try await URLSession.shared.data(for: request)
        #expect((response as? HTTPURLResponse)?.value(forHTTPHeaderField: "TopChrome-Heartbeat") == "7")
    }

    /// The real server, started with a 2 s heartbeat, is stopped (SIGSTOP):
    /// a client left at its defaults notices within twice the heartbeat (not
    /// the 30 s it takes from a service that names none), tells the
    /// interruption as a timeout, and is live again once the server goes on.
    @Test func aStoppedServerIsNoticedWithinTwiceItsHeartbeat() async throws {
        let heartbeat = 2.0
        let server = try WatchCommandTests.Run(WatchCommandTests.buildFolder.appendingPathComponent("topchrome"),
                                               ["--port", "0", "--heartbeat", "\(Int(heartbeat))", "--log-level", "warn"])
        defer {
            kill(server.process.processIdentifier, SIGCONT)
            server.process.terminate()
        }
        // The address is logged at every level: "… listening on http://127.0.0.1:PORT …".
        let listening = { server.lines.first { $0.contains("listening on http://") } }
        #expect(await eventually(within: 10) { listening() != nil }, "\(server.lines) \(server.standardError)")
        guard let address = listening()?.split(separator: " ").first(where: { $0.hasPrefix("http://") }),
              let url = URL(string: String(address)) else { return }

        let client = ChromeService(baseURL: url, bearerToken: nil, configuration: {
            var configuration = ChromeService.Configuration()
            configuration.retry = RetryPolicy(initialDelay: 0.02, maximumDelay: 0.1, maximumAttempts: 50, maximumRetryAfter: 0.1)
            return configuration
        }())
        let session = try await client.createSession(inset: 59)
        let events = ConnectionEvents()
        let recorder = StateRecorder(session.states(onConnection: events.append))
        defer { recorder.cancel() }
        #expect(await recorder.waitFor { $0.count == 1 })

        kill(server.process.processIdentifier, SIGSTOP)
        let stopped = ContinuousClock.now
        #expect(await eventually(within: 15) { !events.failedAttempts.isEmpty }, "\(events.all)")
        let noticedAfter = ContinuousClock.now - stopped
        // Nearer twice the heartbeat (4 s) than the 30 s a service that names
        // none gets: a busy machine's timers (or a sanitizer's) are late by
        // seconds, never by thirteen.
        #expect(noticedAfter < .seconds((2 * heartbeat + 30) / 2), "noticed after \(noticedAfter)")
        guard case let .interrupted(.transport(_, code), 1)? = events.all.dropFirst().first else {
            Issue.record("not told as a transport failure: \(events.all)")
            return
        }
        #expect(code == .timedOut)

        kill(server.process.processIdentifier, SIGCONT)
        #expect(await eventually { events.all.last == .connected }, "\(events.all)")
    }
}
