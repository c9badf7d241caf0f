import Dispatch
import MicroHTTPD
import TopChromeCore

/// A `GET` that waits (`Prefer: wait=N`) until the session's version is no
/// longer one the client has (`If-None-Match`), or the time is up.
final class LongPollWatcher: SessionWatcher, @unchecked Sendable {
    let id: SessionID
    let pending = PendingResponse()
    /// Holds for versions the client does not have yet.
    private let isNew: VersionCondition
    private let waitSeconds: Int

    init(id: SessionID, isNew: VersionCondition, waitSeconds: Int) {
        self.id = id
        self.isNew = isNew
        self.waitSeconds = waitSeconds
    }

    private var applied: (String, String) { ("Preference-Applied", "wait=\(waitSeconds)") }

    /// Answers at once if the session already moved on; else starts the clock.
    func start(with session: Session, hub: WatcherHub) {
        guard deliver(session) else {
            hub.remove(self, for: id)
            return
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(waitSeconds)) { [self] in
            var notModified = SessionAPI.stateResponse(session)
            notModified.status = 304
            notModified.headers.add(name: applied.0, value: applied.1)
            // Time is up: the client's version is still current.
            if pending.complete(with: notModified) { hub.remove(self, for: id) }
        }
    }

    func deliver(_ session: Session) -> Bool {
        guard isNew.holds(for: session.state.version) else { return !pending.isCompleted }
        var response = SessionAPI.stateResponse(session)
        response.headers.add(name: applied.0, value: applied.1)
        pending.complete(with: response)
        return false
    }

    func sessionRemoved() {
        pending.complete(with: SessionAPI.unknownSession.response)
    }

    func heartbeat() {}

    func close() {
        pending.complete(with: SessionAPI.shuttingDown.response)
    }
}
