import Foundation

/// How long an event stream may stay silent (no state, no heartbeat)
/// before it is taken for dead: twice the service's heartbeat, as
/// centrifuge's `maxServerPingDelay` does, so one late heartbeat is
/// forgiven and a stopped server is noticed within two.
enum StreamIdleLimit {
    /// Until the service names its heartbeat (or from one that never does):
    /// twice its default of 15 s.
    static let unnamedHeartbeat: Double = 30

    /// The app's own limit wins; else twice the heartbeat the service named.
    static func seconds(configured: Double?, heartbeat: Double?) -> Double {
        configured ?? heartbeat.map { 2 * $0 } ?? unnamedHeartbeat
    }

    /// `TopChrome-Heartbeat`: whole seconds, 1 or more; anything else names none.
    static func heartbeat(header: String?) -> Double? {
        guard let value = header.flatMap({ Int($0.trimmingCharacters(in: .whitespaces)) }), value > 0 else { return nil }
        return Double(value)
    }
}

/// Ends a connection that stays silent past its limit, for both ways of
/// reading a stream alike: restarted by every piece that arrives, and
/// by the head once it names the heartbeat.
struct StreamIdleWatch {
    private let connection: EventStreamConnection
    private var timer: Task<Void, Never>?

    init(_ connection: EventStreamConnection) {
        self.connection = connection
    }

    /// `answered`: whether the service has answered yet, for the reason told.
    /// A limit too long for the clock (`.infinity`) is never.
    mutating func restart(seconds: Double, answered: Bool) {
        timer?.cancel()
        guard seconds < Double(Int32.max) else {
            timer = nil
            return
        }
        timer = Task { [connection] in
            guard (try? await Task.sleep(nanoseconds: UInt64(max(0, seconds) * 1_000_000_000))) != nil else { return }
            let whole = Int(seconds.rounded(.up))
            let reason = answered ? "timed out: nothing arrived for \(whole) s, not even a heartbeat"
                : "timed out: no answer within \(whole) s"
            connection.close(failing: URLError(.timedOut, userInfo: [NSLocalizedDescriptionKey: reason]))
        }
    }

    func stop() {
        timer?.cancel()
    }
}
