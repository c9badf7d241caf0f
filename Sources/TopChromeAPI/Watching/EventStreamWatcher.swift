import AccessTokens
import Dispatch
import Locking
import MicroHTTPD
import StrictJSON
import TopChromeCore

/// A Server-Sent Events stream of one session's states.
///
/// Events carry the entity tag (`<version>.<tag>`) as their id, and pass
/// in the order ``SentStates`` keeps. A client too slow to take
/// events is closed rather than buffered without bound; it reconnects with
/// `Last-Event-ID` and gets the current state, which is what it needs.
final class EventStreamWatcher: SessionWatcher, @unchecked Sendable {
    /// Milliseconds a browser's EventSource waits before reconnecting.
    static let reconnectDelay = 2000

    let id: SessionID
    let stream: ResponseStream
    /// The access token that opened it; nil for the global token.
    private let access: AccessToken?
    private let lock = PthreadLock()
    private var sent = SentStates()
    /// Ends a stream opened with an access token at the token's `exp`.
    private var expiry: DispatchSourceTimer?

    init(id: SessionID, stream: ResponseStream, access: AccessToken?) {
        self.id = id
        self.stream = stream
        self.access = access
    }

    /// Opens the stream with the current state, unless the client already
    /// has it (`Last-Event-ID` equal to the current entity tag: the version
    /// alone could name a state the store lost).
    func start(with session: Session, lastEventID: EntityTag?) {
        lock.withLock {
            stream.write(Array("retry: \(Self.reconnectDelay)\n\n".utf8))
            let current = session.entityTag
            if lastEventID == current {
                // A change may have come first, on another thread.
                sent.clientHas(current)
            } else {
                _ = send(current, Self.event(for: session))
            }
        }
    }

    func sessionChanged(_ change: SessionChange) -> Bool {
        lock.withLock {
            send(change.session.entityTag, change.rendering(Self.event(for:)),
                 isResynchronization: change.isResynchronization)
        }
    }

    /// `event: state`, the entity tag as id, the state as one line of JSON.
    static func event(for session: Session) -> [UInt8] {
        Array("event: state\nid: \(session.entityTag)\ndata: ".utf8) + StateWriter.json(session) + Array("\n\n".utf8)
    }

    private func send(_ tag: EntityTag, _ event: [UInt8], isResynchronization: Bool = false) -> Bool {
        guard sent.admit(tag, isResynchronization: isResynchronization) else { return stream.isOpen }
        return writeOrClose(event)
    }

    func sessionRemoved(_ id: SessionID) {
        var event = Array("event: deleted\ndata: ".utf8)
        var json = JSONWriter()
        json.object { $0.member("id") { $0.string(id.description) } }
        event += json.bytes + Array("\n\n".utf8)
        stream.write(event)
        stream.finish()
    }

    /// An access token opened the stream: it ends when the token does, with
    /// `event: expired`, so the client knows to come back with a new token
    /// (and `Last-Event-ID`) rather than reconnect with this one.
    func end(afterSeconds seconds: Int64) {
        let timer = DispatchSource.makeTimerSource(queue: .global())
        timer.schedule(wallDeadline: .now() + .seconds(Int(max(seconds, 0))))
        timer.setEventHandler { [self] in end(because: "token") }
        lock.withLock { expiry = timer }
        timer.resume()
    }

    /// The cut-off moved past the token's `iat`: the same end as at `exp`,
    /// with its own reason, so a client gets a new token either way.
    func endIfRevoked(by policy: TokenVerifier.Policy) -> Bool {
        guard let access, policy.revokes(issuedAt: access.issuedAt) else { return false }
        end(because: "revoked")
        return true
    }

    private func end(because reason: StaticString) {
        stream.write(Array("event: expired\ndata: {\"reason\":\"\(reason)\"}\n\n".utf8))
        stream.finish()
        cancelExpiry()
    }

    /// The stream closed first: the timer and what it holds go now, not at `exp`.
    func cancelExpiry() {
        let timer = lock.withLock { () -> DispatchSourceTimer? in
            defer { expiry = nil }
            return expiry
        }
        timer?.cancel()
    }

    func heartbeat() {
        _ = writeOrClose(Array(": heartbeat\n\n".utf8))
    }

    func close() {
        stream.finish()
    }

    private func writeOrClose(_ bytes: [UInt8]) -> Bool {
        guard stream.write(bytes) else {
            stream.finish()
            return false
        }
        return true
    }
}
