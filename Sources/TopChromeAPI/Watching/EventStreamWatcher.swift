import Locking
import MicroHTTPD
import StrictJSON
import TopChromeCore

/// A Server-Sent Events stream of one session's states.
///
/// Events carry the version as their id, and ids go backwards only when
/// the store does: a state older than one already sent is dropped, unless
/// it is the store's state read again after its feed lost touch (a
/// failover can lose the last acknowledged changes; the client must then
/// hold what the store holds). A client too slow to take
/// events is closed rather than buffered without bound; it reconnects with
/// `Last-Event-ID` and gets the current state, which is what it needs.
final class EventStreamWatcher: SessionWatcher, @unchecked Sendable {
    /// Milliseconds a browser's EventSource waits before reconnecting.
    static let reconnectDelay = 2000

    let id: SessionID
    let stream: ResponseStream
    private let lock = PthreadLock()
    private var lastSentVersion: UInt64 = 0

    init(id: SessionID, stream: ResponseStream) {
        self.id = id
        self.stream = stream
    }

    /// Opens the stream with the current state, unless the client already
    /// has it (`Last-Event-ID` equal to the current version).
    func start(with session: Session, lastEventID: UInt64?) {
        lock.withLock {
            stream.write(Array("retry: \(Self.reconnectDelay)\n\n".utf8))
            if lastEventID == session.state.version {
                lastSentVersion = max(lastSentVersion, session.state.version)
            } else {
                _ = send(version: session.state.version, Self.event(for: session))
            }
        }
    }

    func sessionChanged(_ change: SessionChange) -> Bool {
        lock.withLock {
            send(version: change.session.state.version, change.rendering(Self.event(for:)),
                 isResynchronization: change.isResynchronization)
        }
    }

    /// `event: state`, the version as id, the state as one line of JSON.
    static func event(for session: Session) -> [UInt8] {
        Array("event: state\nid: \(session.state.version)\ndata: ".utf8) + StateWriter.json(session) + Array("\n\n".utf8)
    }

    private func send(version: UInt64, _ event: [UInt8], isResynchronization: Bool = false) -> Bool {
        guard version > lastSentVersion || (isResynchronization && version != lastSentVersion) else { return stream.isOpen }
        lastSentVersion = version
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
