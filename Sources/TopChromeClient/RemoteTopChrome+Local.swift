import Foundation
import TopChromeCore

/// A `RemoteTopChrome` with no service behind it, for SwiftUI previews and
/// an app's unit tests: the views observe the same object they do in the
/// app, and it moves by the same rules, in memory.
extension RemoteTopChrome {
    /// A chrome that never touches the network: reports, `setInset`,
    /// `setBehavior` and `disappear` are applied here by the service's own
    /// rules and answered at once; `follow()` shows it `.live` until its
    /// task ends. `receive(_:)` plays a state the service would announce
    /// (another device, an operator), `simulate(connection:lastError:)` a
    /// connection in trouble. A hidden island for a preview:
    /// `.local(SessionState(id: "preview", inset: 59, isRevealed: false, version: 1))`.
    public static func local(_ state: SessionState = SessionState(id: "local", inset: 59, isRevealed: true, version: 1))
        -> RemoteTopChrome {
        // A session that is never used: `.invalid` names no host (RFC 2606).
        let chrome = RemoteTopChrome(session: ChromeService(baseURL: URL(string: "http://local.invalid")!, bearerToken: nil)
            .session(id: state.id))
        chrome.local = LocalChrome(state)
        chrome.apply(state)
        return chrome
    }

    /// Shows `state` as if the service announced it: with `local(_:)`, it
    /// becomes the state later changes start from; with a service, the
    /// service's next state wins, as always.
    public func receive(_ state: SessionState) {
        local?.replace(with: state)
        apply(state)
    }

    /// Shows a connection's trouble without one, for a preview or a test
    /// of the app's banner: `.retrying(after: 4)` with `.transport("offline")`,
    /// say. A chrome that follows a service overwrites it with the real one.
    public func simulate(connection: ConnectionState, lastError: TopChromeError? = nil) {
        self.connection = connection
        self.lastError = lastError
    }

    /// `follow()` with no service: live (unless a simulated state says
    /// otherwise) until the calling task is cancelled or the session deleted.
    func followLocally() async {
        guard local?.isGone == false else { return }
        if connection == .stopped { connection = .live }
        // Until cancelled: by the caller's task, or by a local delete.
        let waiting = Task {
            while !Task.isCancelled { _ = try? await Task.sleep(nanoseconds: 365 * 86_400 * 1_000_000_000) }
        }
        localFollowing = waiting
        await withTaskCancellationHandler {
            await waiting.value
        } onCancel: {
            waiting.cancel()
        }
        localFollowing = nil
        if local?.isGone == false { connection = .stopped }
    }

    /// A report or a disappearance: applied, and shown as the service's
    /// answer; one the service would refuse is told as a report's failure.
    func moveLocally(_ input: ChromeInput) {
        do {
            try changeLocally(input)
        } catch {
            news.refused(error)
        }
    }

    /// A change that answers a state (`setInset`, `setBehavior`): refused
    /// as the service refuses it, else applied and answered.
    @discardableResult
    func changeLocally(_ input: ChromeInput) throws(TopChromeError) -> SessionState {
        guard var local else { throw .sessionGone(id: session.id) }
        let served = try local.apply(input)
        self.local = local
        apply(served)
        return served
    }

    /// As the service's delete: the session is gone, and following stops.
    func deleteLocally() throws(TopChromeError) {
        try local?.delete()
        lastError = .sessionGone(id: session.id)
        connection = .stopped
        localFollowing?.cancel()
    }
}
