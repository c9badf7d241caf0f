import AccessTokens
import Foundation
import Testing
@testable import TopChromeClient

/// A token the service refuses as invalid (rotated, expired, revoked) is
/// renewed by the app's provider and the request or stream goes on, the
/// app seeing no error and the stream no gap.
@Suite struct TokenRenewalLiveTests {
    @Test func aRefusedTokenIsRenewedAndTheRequestSentAgain() async throws {
        let folder = try StateFolder()
        let tokenFile = folder.url.appendingPathComponent("token").path
        try "first".write(toFile: tokenFile, atomically: true, encoding: .utf8)
        let server = try TestServer { $0.auth.token = "first"; $0.auth.tokenFile = tokenFile }
        let backend = Backend(token: "first", next: "second")
        let session = try await server.client(tokens: backend.token).createSession(inset: 59)

        try "second".write(toFile: tokenFile, atomically: true, encoding: .utf8)
        server.reload()
        #expect(try await session.setInset(30).inset == 30, "sent again with the renewed token")
        #expect(backend.refusals == ["first"], "asked once for a new one, told which was refused")
    }

    /// The service comes back with another token: the stream's reconnection
    /// is refused, renews its token, and resumes from its last event.
    @Test func aStreamRenewsARefusedTokenAndResumes() async throws {
        let folder = try StateFolder()
        let server = try TestServer { $0.auth.token = "first"; $0.stateFile.path = folder.stateFile }
        let backend = Backend(token: "first", next: "second")
        let session = try await server.client(tokens: backend.token).createSession(inset: 59)
        let recorder = StateRecorder(session.states())
        #expect(await recorder.waitFor { $0.last?.version == 1 })

        server.stop()
        server.reconfigure { $0.auth.token = "second" }
        try server.start()
        // Nothing else asks for a token meanwhile: the stream's reconnection meets the refusal.
        #expect(await eventually { backend.refusals == ["first"] }, "the stream renewed its token: \(backend.refusals); ended: \(String(describing: recorder.end))")
        try await session.setInset(30)
        #expect(await recorder.waitFor { $0.last?.version == 2 }, "\(recorder.versions); ended: \(String(describing: recorder.end))")
        #expect(recorder.versions == [1, 2], "each version once, in order")
        #expect(recorder.end == nil, "still following")
        #expect(backend.refusals == ["first"], "one renewal: \(backend.refusals)")
        recorder.cancel()
    }

    /// An access token good for 2 s: the service ends the stream at its
    /// `exp` (`event: expired`); the stream is on again at once with a new
    /// token, from its last event, and follows what changes after.
    @Test func aStreamGoesOnPastItsTokensExpiry() async throws {
        let signer = try TokenSigner(seed: Array(repeating: 7, count: 32), keyID: "app")
        let server = try TestServer {
            $0.auth.token = "admin"
            $0.tokens.keysJWKS = String(decoding: signer.jwks, as: UTF8.self)
        }
        let id = try await server.client(tokens: { _ in "admin" }).createSession(inset: 59).id
        let backend = Backend(minting: signer, sessionID: id)
        let session = server.client(tokens: backend.token).session(id: id)
        let events = ConnectionLog()
        let recorder = StateRecorder(session.states(onConnection: events.add))
        #expect(await recorder.waitFor { $0.last?.version == 1 })
        // Past the first token's exp: the stream ended and came back.
        #expect(await eventually(within: 15) { backend.refusals.count >= 1 }, "told of the expired token: \(events.all)")
        try await session.setInset(30)
        #expect(await recorder.waitFor { $0.last?.version == 2 }, "\(recorder.versions); ended: \(String(describing: recorder.end))")
        #expect(recorder.versions == [1, 2], "each version once: no gap, nothing twice")
        #expect(events.interruptions == 0, "an expiry is no outage: \(events.all)")
        recorder.cancel()
    }

    /// The same over the session's socket: the service closes it at the
    /// token's `exp` (4401); it is opened again at once with a new token,
    /// and the changes and states go on over it.
    @Test func aSocketGoesOnPastItsTokensExpiry() async throws {
        let signer = try TokenSigner(seed: Array(repeating: 7, count: 32), keyID: "app")
        let server = try TestServer {
            $0.auth.token = "admin"
            $0.tokens.keysJWKS = String(decoding: signer.jwks, as: UTF8.self)
        }
        let id = try await server.client(tokens: { _ in "admin" }).createSession(inset: 59).id
        let backend = Backend(minting: signer, sessionID: id)
        let opener = LoopbackChromeSocket.Opener()
        var configuration = server.client().configuration
        configuration.usesWebSocket = true
        configuration.socketOpener = opener.open
        let session = ChromeService(baseURL: server.url, configuration: configuration, tokens: backend.token).session(id: id)
        let events = ConnectionLog()
        let recorder = StateRecorder(session.states(onConnection: events.add))
        #expect(await recorder.waitFor { $0.last?.version == 1 })
        #expect(await eventually(within: 15) { backend.refusals.count >= 1 }, "told of the expired token: \(events.all)")
        // Connected on the second socket: its first state has come, so changes go on it.
        #expect(await eventually { opener.sockets.count >= 2 && events.all.filter { $0 == "connected" }.count >= 2 },
                "a second socket: \(events.all)")
        try await session.setInset(30)
        #expect(await recorder.waitFor { $0.last?.version == 2 }, "\(recorder.versions); ended: \(String(describing: recorder.end))")
        #expect(recorder.versions == [1, 2], "each version once: no gap, nothing twice")
        #expect(events.interruptions == 0, "an expiry is no outage: \(events.all)")
        #expect(opener.sockets.flatMap(\.sent).contains { $0.contains(#""type":"inset""#) }, "the change went on a socket")
        recorder.cancel()
    }

    /// Without a provider there is nothing to renew: the refusal is told.
    @Test func aFixedTokenRefusedIsTold() async throws {
        let server = try TestServer { $0.auth.token = "first" }
        let session = try await ChromeService(baseURL: server.url, bearerToken: "first", configuration: server.client().configuration)
            .createSession(inset: 59)
        server.stop()
        server.reconfigure { $0.auth.token = "second" }
        try server.start()
        await #expect {
            try await session.setInset(30)
        } throws: { error in
            guard case let .rejected(problem)? = error as? TopChromeError else { return false }
            return problem.status == 401
        }
    }
}

/// The app's backend as its provider sees it: it hands out a token made
/// by `make` (given the one the service refused, if any) and notes which
/// tokens were handed back as refused or expired.
private final class Backend: @unchecked Sendable {
    private let lock = NSLock()
    private let make: (_ refused: String?) -> String
    private var refused: [String] = []

    init(_ make: @escaping (_ refused: String?) -> String) {
        self.make = make
    }

    /// Holds `token` until the service refuses it, then `next`.
    convenience init(token: String, next: String) {
        var held = token
        self.init { refused in
            if refused == held { held = next }
            return held
        }
    }

    /// A token for `sessionID`, minted at each ask: good for 2 s the first
    /// time, the expiry the test waits for; then for an hour, so that no
    /// later expiry comes while a busy run holds the test up (a change made
    /// between two sockets goes over HTTP).
    convenience init(minting signer: TokenSigner, sessionID: String) {
        var lifetime: Int64 = 2
        self.init { _ in
            defer { lifetime = 3600 }
            return signer.token(sessionID: sessionID, scope: "write", now: Int64(Date().timeIntervalSince1970), lifetime: lifetime)
        }
    }

    var refusals: [String] { lock.withLock { refused } }

    @Sendable func token(refused token: String?) async throws -> String? {
        lock.withLock {
            if let token { refused.append(token) }
            return make(token)
        }
    }
}

/// What `states(onConnection:)` told.
private final class ConnectionLog: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [String] = []
    private var interrupted = 0

    var all: [String] { lock.withLock { events } }
    var interruptions: Int { lock.withLock { interrupted } }

    @Sendable func add(_ event: StreamConnectionEvent) {
        lock.withLock {
            events.append("\(event)")
            if case .interrupted = event { interrupted += 1 }
        }
    }
}
