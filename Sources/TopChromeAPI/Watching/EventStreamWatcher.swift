import AccessTokens
import Dispatch
import Locking
import MicroHTTPD
import StrictJSON
import TopChromeCore

/// A Server-Sent Events stream of one session's states.
///
/// Events carry the entity tag (`<version>.<tag>`) as their id, and
/// versions go backwards only when the store does: a state older than one
/// already sent is dropped, unless it is the store's state read again after
/// its feed lost touch (a failover can lose the last acknowledged changes;
/// the client must then hold what the store holds). A state with the
/// version last sent but another tag is one that replaced a lost state,
/// and is sent. A client too slow to take
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
    /// Nil until the client has a state: none sent, and none it named.
    private var lastSent: EntityTag?
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
                if (lastSent?.version ?? 0) < current.version { lastSent = current }
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
        if let lastSent {
            let isNewer = tag.version > lastSent.version
            let replacesLost = tag != lastSent && (isResynchronization || tag.version == lastSent.version)
            guard isNewer || replacesLost else { return stream.isOpen }
        }
        lastSent = tag
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
