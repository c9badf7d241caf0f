import Foundation
import Redis

/// Connection events as a hook receives them, from I/O threads.
final class EventLog: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [RedisConnectionEvent] = []

    func append(_ event: RedisConnectionEvent) { lock.withLock { events.append(event) } }
    var all: [RedisConnectionEvent] { lock.withLock { events } }
    var changes: [RedisConnectionEvent.Change] { all.map(\.change) }
}
