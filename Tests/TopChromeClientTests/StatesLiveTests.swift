import Foundation
import Testing
// The listener alone: the module's synchronous `eventually` would be chosen
// over this target's asynchronous one.
import class TopChromeTesting.LoopbackListener
import TopChromeClient

/// `states()`: the event stream through the library, across a restart of the service.
@Suite(.timeLimit(.minutes(10))) struct StatesLiveTests {
    @Test func followsChangesAndEndsWhenDeleted() async throws {
        let server = try TestServer()
        let session = try await server.client().createSession(inset: 59)
        let recorder = StateRecorder(session.states())
        #expect(await recorder.waitFor { $0.count == 1 }, "the current state first")
        await session.report(contentOffsetY: 300, contentInsetTop: 59)
        try await session.setInset(40)
        #expect(await recorder.waitFor { $0.last?.version == 3 })
        #expect(recorder.states.map(\.isRevealed) == [true, false, false])
        #expect(recorder.states.last?.inset == 40)
        try await session.delete()
        let end = await recorder.waitForEnd()
        #expect(throws: Never.self) { try end?.get() }
        #expect(end != nil, "the stream ends after `event: deleted`")
    }

    /// The service restarts (with its state file) while a consumer reads:
    /// it reconnects with Last-Event-ID, sees the changes after the restart,
    /// and no version twice.
    @Test func reconnectsAcrossARestart() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("client-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try TestServer { $0.stateFile.path = folder.appendingPathComponent("state.jsonl").path }
        let session = try await server.client().createSession(inset: 59)
        let recorder = StateRecorder(session.states())
        #expect(await recorder.waitFor { $0.last?.version == 1 })
        try await session.setInset(50)
        #expect(await recorder.waitFor { $0.last?.version == 2 })

        server.stop()
        try server.start()
        #expect(try await eventually { try await server.gauge("topchrome_watchers") == 1 }, "the reader is back")
        try await session.setInset(30)
        #expect(await recorder.waitFor { $0.last?.version == 3 }, "\(recorder.versions)")
        await session.report(contentOffsetY: 500, contentInsetTop: 30)
        #expect(await recorder.waitFor { $0.last?.version == 4 }, "\(recorder.versions)")
        #expect(recorder.versions == [1, 2, 3, 4], "each version once, in order")
        #expect(recorder.states.last == SessionState(id: session.id, inset: 30, isRevealed: false, version: 4, lastSeq: 1))
        recorder.cancel()
    }

    /// `states(onConnection:)` tells a caller when the stream opens, when
    /// attempts fail (counted from 1 again in each outage) and when it is back.
    @Test func reportsTheConnectionAcrossAnOutage() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("client-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try TestServer { $0.stateFile.path = folder.appendingPathComponent("state.jsonl").path }
        let session = try await server.client().createSession(inset: 59)
        let events = ConnectionEvents()
        let recorder = StateRecorder(session.states(onConnection: events.append))
        #expect(await recorder.waitFor { $0.count == 1 })
        #expect(events.all == [.connected])

        server.stop()
        #expect(await eventually(within: 30) { events.failedAttempts.count >= 3 }, "\(events.all)")
        try server.start()
        #expect(await eventually { events.all.last == .connected }, "\(events.all)")
        let attempts = events.failedAttempts
        #expect(attempts == Array(1...attempts.count), "one outage, its attempts counted from 1")
        #expect(events.all.first == .connected && events.all.filter { $0 == .connected }.count == 2)
        recorder.cancel()
    }

    /// A stream the service ends cleanly and that reopens at once is no
    /// outage: nothing is told but the connections.
    @Test func aCleanlyEndedStreamIsNoOutage() async throws {
        let server = try ClosingEventServer()
        defer { server.stop() }
        let client = ChromeService(baseURL: URL(string: "http://127.0.0.1:\(server.port)")!, bearerToken: nil)
        let events = ConnectionEvents()
        let recorder = StateRecorder(client.session(id: String(repeating: "1", count: 32)).states(onConnection: events.append))
        #expect(await eventually(within: 30) { server.connections >= 3 }, "it reconnects after each clean end")
        #expect(await eventually(within: 30) { events.all.count >= 3 })
        #expect(events.failedAttempts.isEmpty, "\(events.all)")
        #expect(recorder.versions == [1], "the same state once")
        recorder.cancel()
    }

    /// A connection that goes quiet (no state, no heartbeat) for longer than
    /// `streamIdleTimeout` is taken for dead: the stream tells it and opens
    /// another, rather than waiting on it for ever.
    @Test func aSilentConnectionIsGivenUp() async throws {
        let server = try ClosingEventServer(closes: false)
        defer { server.stop() }
        let client = ChromeService(baseURL: URL(string: "http://127.0.0.1:\(server.port)")!, bearerToken: nil, configuration: {
            var configuration = ChromeService.Configuration()
            configuration.streamIdleTimeout = 1
            configuration.retry = RetryPolicy(initialDelay: 0.01, maximumDelay: 0.02)
            return configuration
        }())
        let events = ConnectionEvents()
        let recorder = StateRecorder(client.session(id: String(repeating: "1", count: 32)).states(onConnection: events.append))
        // The second connection can come before the client has told of the
        // first's end (a sanitizer's run saw it): wait for what is told.
        #expect(await eventually(within: 20) { server.connections >= 2 && !events.failedAttempts.isEmpty && !recorder.versions.isEmpty },
                "\(events.all)")
        #expect(events.failedAttempts.first == 1, "the quiet connection was told as cut: \(events.all)")
        #expect(recorder.versions == [1])
        recorder.cancel()
    }

    /// An app that never wants a quiet stream given up sets `.infinity`: the
    /// stream opens, follows, and keeps its quiet connection.
    @Test func anInfiniteIdleTimeoutKeepsAQuietConnection() async throws {
        let server = try ClosingEventServer(closes: false)
        defer { server.stop() }
        let client = ChromeService(baseURL: URL(string: "http://127.0.0.1:\(server.port)")!, bearerToken: nil, configuration: {
            var configuration = ChromeService.Configuration()
            configuration.streamIdleTimeout = .infinity
            return configuration
        }())
        let recorder = StateRecorder(client.session(id: String(repeating: "1", count: 32)).states())
        #expect(await recorder.waitFor { $0.count == 1 })
        try await Task.sleep(nanoseconds: 2_500_000_000)
        #expect(server.connections == 1, "the quiet connection is kept")
        #expect(recorder.versions == [1])
        recorder.cancel()
    }

    /// A server that was never there: the attempts keep failing and are told,
    /// each with the reason, while the stream keeps trying.
    @Test func reportsAServerThatCannotBeReached() async throws {
        let client = ChromeService(baseURL: URL(string: "http://127.0.0.1:1")!, bearerToken: nil, configuration: {
            var configuration = ChromeService.Configuration()
            configuration.retry = RetryPolicy(initialDelay: 0.01, maximumDelay: 0.02)
            return configuration
        }())
        let events = ConnectionEvents()
        let recorder = StateRecorder(client.session(id: String(repeating: "1", count: 32)).states(onConnection: events.append))
        #expect(await eventually(within: 30) { events.failedAttempts.count >= 3 }, "\(events.all)")
        #expect(events.failedAttempts.prefix(3) == [1, 2, 3])
        guard case let .interrupted(.transport(reason, _), _)? = events.all.first else {
            Issue.record("not a transport error: \(events.all)")
            return
        }
        #expect(!reason.isEmpty)
        #expect(recorder.end == nil, "the stream keeps trying")
        recorder.cancel()
    }

    /// A service restarted from an older state file (a copy restored by an
    /// operator) starts again from a lower version: the reader still shows
    /// that state rather than waiting for the count to pass the old one.
    @Test func followsAServiceWhoseVersionWentBack() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("client-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let stateFile = folder.appendingPathComponent("state.jsonl")
        let older = folder.appendingPathComponent("older.jsonl")
        let server = try TestServer { $0.stateFile.path = stateFile.path }
        let session = try await server.client().createSession(inset: 59)
        server.stop()
        try FileManager.default.copyItem(at: stateFile, to: older)   // version 1, inset 59
        try server.start()

        let recorder = StateRecorder(session.states())
        #expect(await recorder.waitFor { $0.last?.version == 1 })
        try await session.setInset(50)
        try await session.setInset(40)
        #expect(await recorder.waitFor { $0.last?.version == 3 }, "\(recorder.versions)")

        server.stop()
        try FileManager.default.removeItem(at: stateFile)
        try FileManager.default.copyItem(at: older, to: stateFile)
        try server.start()
        #expect(await recorder.waitFor { $0.last?.inset == 59 }, "the restored state is shown: \(recorder.versions)")
        #expect(recorder.states.last == SessionState(id: session.id, inset: 59, isRevealed: true, version: 1))
        recorder.cancel()
    }

    /// Cancelling the reading task closes the connection: the server's
    /// watcher count drops back to zero.
    @Test func cancellingTheReaderClosesTheConnection() async throws {
        // Heartbeats let the server notice a client that left.
        let server = try TestServer { $0.sessions.heartbeatSeconds = 1 }
        let session = try await server.client().createSession()
        let recorder = StateRecorder(session.states())
        #expect(await recorder.waitFor { !$0.isEmpty })
        #expect(try await server.gauge("topchrome_watchers") == 1)
        recorder.cancel()
        #expect(try await eventually { try await server.gauge("topchrome_watchers") == 0 })
    }
}

/// The connection events a stream reported, in order.
final class ConnectionEvents: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [StreamConnectionEvent] = []

    func append(_ event: StreamConnectionEvent) { lock.withLock { events.append(event) } }
    var all: [StreamConnectionEvent] { lock.withLock { events } }
    var failedAttempts: [Int] {
        all.compactMap { if case let .interrupted(_, count) = $0 { count } else { nil } }
    }
}

/// An event-stream server that answers every connection with one state and
/// a short `retry:`, then closes it cleanly, or (`closes: false`) keeps it
/// open and says nothing more: a connection that died without a word.
final class ClosingEventServer: Sendable {
    private let listener: LoopbackListener

    /// `contentType`: what the answer says it is; anything but
    /// `text/event-stream` is a captive portal or a proxy's page.
    init(closes: Bool = true, contentType: String = "text/event-stream") throws {
        listener = try LoopbackListener(backlog: 16) { connection in
            var buffer = [UInt8](repeating: 0, count: 4096)
            _ = recv(connection, &buffer, buffer.count, 0)
            let answer = "HTTP/1.1 200 OK\r\nContent-Type: \(contentType)\r\nConnection: close\r\n\r\n"
                + "retry: 10\n\nevent: state\nid: 1\ndata: {\"id\":\"\(String(repeating: "1", count: 32))\",\"inset\":0,\"isRevealed\":true,\"version\":1}\n\n"
            LoopbackListener.send(Array(answer.utf8), on: connection)
            // Silent: held open until the server stops, which ends the read.
            if !closes { _ = recv(connection, &buffer, buffer.count, 0) }
        }
    }

    var port: Int { listener.port }
    var connections: Int { listener.accepted }

    /// Accepts no more and closes the connections kept open.
    func stop() {
        listener.stop()
    }
}
