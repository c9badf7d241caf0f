import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A session's open socket, as its changes use it: each change a message
/// with an id, its answer found by that id. The follower reads the socket
/// and hands answers here; when the socket ends, changes still waiting get
/// a transport error, which the sender retries as it retries HTTP (a
/// report keeps its seqs, so one that did arrive is ignored as stale).
actor SessionSocketLink {
    private let socket: any ChromeSocket
    private let sessionID: String
    private var waiting: [String: CheckedContinuation<ChromeService.Outcome, Never>] = [:]
    private var early: [String: ChromeService.Outcome] = [:]
    private var nextID: UInt64 = 0
    private var ended = false

    /// Seconds a change waits for its answer (`requestTimeout`): past it the
    /// socket is taken for dead and closed, as a request that timed out.
    private let answerTimeout: Double

    init(_ socket: any ChromeSocket, sessionID: String, answerTimeout: Double) {
        self.socket = socket
        self.sessionID = sessionID
        self.answerTimeout = answerTimeout
    }

    /// One change over the socket: `type` and the body its HTTP route takes.
    func attempt(_ type: String, body: Data?) async -> ChromeService.Outcome {
        guard !ended else { return Self.cut }
        nextID += 1
        let id = String(nextID)
        var text = #"{"type":"\#(type)","id":"\#(id)""#
        if let body { text += #","body":"# + String(decoding: body, as: UTF8.self) }
        text += "}"
        // Sent before waiting, so messages leave in the order of the calls;
        // an answer that comes while this waits to send is kept for it.
        do { try await socket.send(text) } catch { return Self.cut }
        if let outcome = early.removeValue(forKey: id) { return outcome }
        guard !ended else { return Self.cut }
        let timeout = Task { [answerTimeout] in
            try await Task.sleep(nanoseconds: UInt64(answerTimeout * 1_000_000_000))
            self.noAnswer(id)
        }
        defer { timeout.cancel() }
        return await withCheckedContinuation { waiting[id] = $0 }
    }

    private func noAnswer(_ id: String) {
        guard let waiter = waiting.removeValue(forKey: id) else { return }
        waiter.resume(returning: .retryable(.transport("no answer on the socket in \(answerTimeout) s", code: .timedOut), retryAfter: nil))
        socket.close()
    }

    /// An `answer` message read by the follower, to the change sent with `id`.
    func answered(_ id: String, with outcome: ChromeService.Outcome) {
        if let waiter = waiting.removeValue(forKey: id) {
            waiter.resume(returning: outcome)
        } else if let sent = UInt64(id), sent <= nextID {
            early[id] = outcome
        }
    }

    /// The socket ended: every change still waiting is retried.
    func end() {
        ended = true
        let left = waiting
        waiting = [:]
        for continuation in left.values { continuation.resume(returning: Self.cut) }
    }

    private static var cut: ChromeService.Outcome {
        .retryable(.transport("the socket closed before the answer", code: nil), retryAfter: nil)
    }

    /// What HTTP would have made of the same change: a problem is classified
    /// by its status as the route's answer would be; a state is the body.
    static func outcome(of answer: [String: Any], sessionID: String) -> ChromeService.Outcome {
        if let problem = answer["problem"] as? [String: Any] {
            let body = (try? JSONSerialization.data(withJSONObject: problem)) ?? Data()
            return ChromeService.classify(status: problem["status"] as? Int ?? 500, body: body, sessionID: sessionID,
                                          retryAfter: nil)
        }
        guard let state = answer["state"], let body = try? JSONSerialization.data(withJSONObject: state) else {
            return .failure(.malformedResponse("an answer on the socket without its state"))
        }
        return .success(body, status: 200, staleReports: answer["staleReports"] as? Int ?? 0)
    }
}
