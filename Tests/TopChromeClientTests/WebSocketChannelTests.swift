import Foundation
import Testing
import TopChromeClient

/// A followed session on the service's WebSocket: states in and changes out
/// on one connection, and HTTP with the event stream where no socket can be had.
@Suite(.timeLimit(.minutes(10))) struct WebSocketChannelTests {
    static func client(_ server: TestServer, _ opener: LoopbackChromeSocket.Opener) -> ChromeService {
        server.client {
            $0.usesWebSocket = true
            $0.socketOpener = opener.open
        }
    }

    @Test func aFollowedSessionSendsAndHearsOnItsSocket() async throws {
        let server = try TestServer()
        let opener = LoopbackChromeSocket.Opener()
        let session = try await Self.client(server, opener).createSession(inset: 59)
        let recorder = StateRecorder(session.states())
        #expect(await recorder.waitFor { $0.count == 1 }, "the current state first")
        let scrollsBefore = try await server.requests("POST", "/v1/sessions/{id}/scroll")
        for offset in stride(from: 0.0, through: 400, by: 50) {
            await session.report(contentOffsetY: offset, contentInsetTop: 59)
        }
        try await session.flush()
        let inset = try await session.setInset(40)
        #expect(inset.inset == 40, "the answer's state")
        #expect(await recorder.waitFor { $0.last?.inset == 40 && $0.last?.isRevealed == false })
        let sent = opener.sockets.flatMap(\.sent)
        #expect(sent.contains { $0.contains(#""type":"scroll""#) } && sent.contains { $0.contains(#""type":"inset""#) })
        #expect(try await server.requests("POST", "/v1/sessions/{id}/scroll") == scrollsBefore, "no scroll went over HTTP")
        #expect(try await server.requests("PUT", "/v1/sessions/{id}/inset") == 0)
        #expect(recorder.states.last?.lastSeq == 9, "every report applied")
        recorder.cancel()
    }

    /// A refused change is the same error as over HTTP, and changes nothing.
    @Test func aRefusalOnTheSocketIsTheHTTPError() async throws {
        let server = try TestServer()
        let opener = LoopbackChromeSocket.Opener()
        let session = try await Self.client(server, opener).createSession(inset: 59)
        let recorder = StateRecorder(session.states())
        #expect(await recorder.waitFor { $0.count == 1 })
        await #expect {
            try await session.setInset(20_000)
        } throws: { error in
            guard case let .rejected(problem)? = error as? TopChromeError else { return false }
            return problem.status == 400
        }
        #expect(try await server.requests("PUT", "/v1/sessions/{id}/inset") == 0, "refused on the socket, not over HTTP")
        #expect(try await session.state().version == 1)
        recorder.cancel()
    }

    /// The service stops and starts again (same port, state file): the
    /// socket is opened again and changes made meanwhile are not lost.
    @Test func theSocketIsOpenedAgainAfterARestart() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("client-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try TestServer { $0.stateFile.path = folder.appendingPathComponent("state.jsonl").path }
        let opener = LoopbackChromeSocket.Opener()
        let session = try await Self.client(server, opener).createSession(inset: 59)
        let recorder = StateRecorder(session.states())
        #expect(await recorder.waitFor { $0.count == 1 })
        server.stop()
        await session.report(contentOffsetY: 300, contentInsetTop: 59)
        try server.start()
        try await session.flush()
        #expect(await recorder.waitFor { $0.last?.isRevealed == false }, "\(recorder.versions)")
        #expect(await eventually { opener.sockets.count >= 2 }, "a second socket")
        try await session.setInset(30)
        #expect(await recorder.waitFor { $0.last?.inset == 30 })
        #expect(try await server.requests("PUT", "/v1/sessions/{id}/inset") == 0, "on the new socket")
        recorder.cancel()
    }

    /// A change whose answer never comes (the network died without a word)
    /// is given up after `requestTimeout`, the socket closed and opened
    /// again, and the change sent again (on HTTP or the new socket,
    /// whichever is there when its retry goes).
    @Test func aChangeWithoutAnAnswerIsSentAgainOnANewSocket() async throws {
        let server = try TestServer()
        let opener = LoopbackChromeSocket.Opener(firstDropsSends: true)
        let client = server.client {
            $0.usesWebSocket = true
            $0.socketOpener = opener.open
            $0.requestTimeout = 1
        }
        let session = try await client.createSession(inset: 59)
        let recorder = StateRecorder(session.states())
        #expect(await recorder.waitFor { $0.count == 1 })
        #expect(try await session.setInset(30).inset == 30)
        #expect(await eventually { opener.sockets.count >= 2 }, "a new socket")
        #expect(await recorder.waitFor { $0.last?.inset == 30 })
        recorder.cancel()
    }

    #if canImport(FoundationNetworking)
    /// Where the platform's networking has no WebSocket (FoundationNetworking
    /// on Debian's libcurl), the session follows and sends over HTTP.
    @Test func withoutASocketTheSessionGoesOnOverHTTP() async throws {
        let server = try TestServer()
        let session = try await server.client { $0.usesWebSocket = true }.createSession(inset: 59)
        let recorder = StateRecorder(session.states())
        #expect(await recorder.waitFor { $0.count == 1 })
        await session.report(contentOffsetY: 300, contentInsetTop: 59)
        try await session.flush()
        #expect(await recorder.waitFor { $0.last?.isRevealed == false })
        #expect(try await server.requests("POST", "/v1/sessions/{id}/scroll") == 1)
        recorder.cancel()
    }
    #endif

    /// A session deleted while followed ends its states as over the event stream.
    @Test func aDeletedSessionEndsItsStates() async throws {
        let server = try TestServer()
        let opener = LoopbackChromeSocket.Opener()
        let session = try await Self.client(server, opener).createSession(inset: 59)
        let recorder = StateRecorder(session.states())
        #expect(await recorder.waitFor { $0.count == 1 })
        try await server.client().session(id: session.id).delete()
        let end = await recorder.waitForEnd()
        #expect(end != nil, "the stream ends after the `deleted` message")
        #expect(throws: Never.self) { try end?.get() }
    }
}
