import AccessTokens
import Dispatch
import Locking
import MicroHTTPD
import TopChromeCore

/// A `GET` that waits (`Prefer: wait=N`) until the session's state is no
/// longer one the client has (`If-None-Match`), or the time is up.
final class LongPollWatcher: SessionWatcher, @unchecked Sendable {
    let id: SessionID
    let pending = PendingResponse()
    /// Holds for states the client does not have yet.
    private let isNew: VersionCondition
    private let waitSeconds: Int
    /// The access token that asked; nil for the global token.
    private let access: AccessToken?
    private let lock = PthreadLock()
    /// The newest state seen, for the 304 when time is up.
    private var latest: Session?

    init(id: SessionID, isNew: VersionCondition, waitSeconds: Int, access: AccessToken?) {
        self.id = id
        self.isNew = isNew
        self.waitSeconds = waitSeconds
        self.access = access
    }

    /// Answers at once if the session already moved on; else starts the clock.
    func start(with session: Session, hub: WatcherHub) {
        guard answer(session, waited: false) else {
            hub.remove(self, for: id)
            return
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(waitSeconds)) { [self] in
            // Time is up: the client's version is still current.
            guard var notModified = lock.withLock({ latest }).map({ SessionAPI.stateAnswer($0) }) else { return }
            notModified.status = 304
            notModified.headers.add(name: "Preference-Applied", value: "wait=\(waitSeconds)")
            if pending.complete(with: notModified) { hub.remove(self, for: id) }
        }
    }

    func sessionChanged(_ change: SessionChange) -> Bool {
        answer(change.session, waited: true)
    }

    /// Completes with 200 if `session` is new to the client; returns whether to keep waiting.
    private func answer(_ session: Session, waited: Bool) -> Bool {
        lock.withLock {
            if (latest?.state.version ?? 0) < session.state.version { latest = session }
        }
        guard isNew.holds(for: session.entityTag) else { return !pending.isCompleted }
        var response = SessionAPI.stateAnswer(session)
        if waited { response.headers.add(name: "Preference-Applied", value: "wait=\(waitSeconds)") }
        pending.complete(with: response)
        return false
    }

    func sessionRemoved(_ id: SessionID) {
        pending.complete(with: SessionAPI.unknownSession.response)
    }

    /// Its changes go unheard: a 304 at the end of the wait would answer
    /// from a state that may no longer be the store's, so the client is
    /// told now, as any request is while the store is away.
    func sessionUnheard(_ id: SessionID) -> Bool {
        pending.complete(with: SessionAPI.changesUnheard.response)
        return false
    }

    /// The cut-off moved past the token's `iat`: the wait ends as the
    /// token's next request would, with 401 `invalid_token`.
    func endIfRevoked(by policy: TokenVerifier.Policy) -> Bool {
        guard let access, policy.revokes(issuedAt: access.issuedAt) else { return false }
        pending.complete(with: AccessGate.invalidToken(.revoked).response)
        return true
    }

    func heartbeat() {}

    func close() {
        pending.complete(with: SessionAPI.shuttingDown.response)
    }
}
