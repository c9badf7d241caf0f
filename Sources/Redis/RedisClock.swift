import Locking

/// Each node's clock (`TIME`) as read from this process's monotonic clock,
/// so that a deadline of ours can be handed to code running inside Redis
/// (a function refusing a change that comes too late).
final class NodeClocks: @unchecked Sendable {
    struct Reading {
        /// The node's clock, in Unix microseconds, at `reference`.
        let microsecondsAtReference: Int64
        let taken: ContinuousClock.Instant

        /// `deadline` on the node's clock, in Unix milliseconds rounded down.
        func milliseconds(at deadline: ContinuousClock.Instant) -> Int64 {
            (microsecondsAtReference + NodeClocks.microseconds(deadline - NodeClocks.reference)) / 1000
        }

        /// Taken within `freshness`: serves without reading the clock again.
        var isFresh: Bool { ContinuousClock.now - taken < NodeClocks.freshness }
    }

    /// Readings are re-taken this often: a node's wall clock may be stepped
    /// or drift against ours.
    static let freshness: Duration = .seconds(30)
    static let reference = ContinuousClock.now

    let lock = PthreadLock()
    // Guarded by `lock`.
    var readings: [RedisNode: Reading] = [:]
    var waiting: [RedisNode: [@Sendable (Answer) -> Void]] = [:]

    /// What a reading of `TIME` came to, for those waiting for it.
    enum Answer {
        case reading(Reading)
        case none
        case refused(String)
    }

    /// By `attoseconds` (one 128-bit division by a constant), not
    /// `components` (two by a variable), as every change converts its deadline.
    static func microseconds(_ duration: Duration) -> Int64 {
        Int64(clamping: duration.attoseconds / 1_000_000_000_000)
    }
}

/// A node's clock as a change's deadline needs it.
public enum NodeTime: Sendable, Equatable {
    /// The deadline on the node's clock, in Unix milliseconds.
    case milliseconds(Int64)
    /// No reading could be taken (no answer, or one too slow to trust):
    /// the change goes without a deadline, and the next one reads again.
    case unknown
    /// Redis refused `TIME` (its error reply).
    case refused(String)
}

extension RedisClient {
    /// `deadline` on the clock of the node now serving `key`, in Unix
    /// milliseconds rounded down, handed to `completion` (at once when the
    /// node's clock was read recently, else once it has been); nil when the
    /// node's clock could not be read.
    ///
    /// `.unknown` when no reading could be taken (no answer, or one too
    /// slow to trust), `.refused` when Redis refused `TIME`.
    ///
    /// Never late: `TIME` is taken as read when its reply arrived, the
    /// latest it can have been, so the node reaches the returned moment no
    /// later than we reach `deadline` (bar a clock stepped since the reading).
    public func redisMilliseconds(at deadline: ContinuousClock.Instant, forKey key: [UInt8],
                                  completion: @escaping @Sendable (NodeTime) -> Void) {
        redisMilliseconds(at: deadline, forSlot: HashSlot.of(key), completion: completion)
    }

    /// The same, for the node serving `slot` (`HashSlot.of` a key).
    public func redisMilliseconds(at deadline: ContinuousClock.Instant, forSlot slot: Int,
                                  completion: @escaping @Sendable (NodeTime) -> Void) {
        guard let node = node(serving: slot) else { return completion(.unknown) }
        // A fresh reading, the case of nearly every call, is looked up once and waits for nothing.
        let (known, mustRead): (NodeClocks.Reading?, Bool) = clocks.lock.withLock {
            let known = clocks.readings[node]
            if let known, known.isFresh { return (known, false) }
            let reading = clocks.waiting[node] != nil
            // A stale reading still serves while a new one is taken.
            if known == nil {
                clocks.waiting[node, default: []].append { answer in
                    switch answer {
                    case let .reading(reading): completion(.milliseconds(reading.milliseconds(at: deadline)))
                    case .none: completion(.unknown)
                    case let .refused(message): completion(.refused(message))
                    }
                }
            } else if !reading {
                clocks.waiting[node] = []
            }
            return (known, !reading)
        }
        if let known { completion(.milliseconds(known.milliseconds(at: deadline))) }
        if mustRead { readClock(of: node, throughSlot: slot) }
    }

    /// The same at once, from a reading of the node's clock taken recently,
    /// as nearly every call finds; nil when it must be read first
    /// (`redisMilliseconds(at:forSlot:completion:)` reads it).
    public func freshRedisMilliseconds(at deadline: ContinuousClock.Instant, forSlot slot: Int) -> Int64? {
        guard let node = node(serving: slot) else { return nil }
        return clocks.lock.withLock {
            guard let known = clocks.readings[node], known.isFresh else { return nil }
            return known.milliseconds(at: deadline)
        }
    }

    /// Sends `TIME` to the node serving `slot`, and hands the reading to
    /// whoever waits for it.
    ///
    /// A reading is off by its round trip (it is taken as made when its
    /// reply arrived), so one held up on the way (a loaded process, a slow
    /// command ahead of it on the connection) would make every change to
    /// the node look late to the function until the next reading, 30 s on.
    /// One slower than a tenth of the command timeout is not kept: the
    /// last reading serves, or none (the function then checks no deadline),
    /// and the next call reads again. A `TIME` refused (an ACL user without
    /// `+time`) drops the node's reading: a change's deadline cannot be
    /// had, which its caller must hear rather than send it without one.
    private func readClock(of node: RedisNode, throughSlot slot: Int) {
        let sent = ContinuousClock.now
        let slowest = configuration.commandTimeout / 10
        send(RESPRequest([Array("TIME".utf8)]), slot: slot) { [clocks] result in
            let arrived = ContinuousClock.now
            var reading: NodeClocks.Reading?
            var refusal: String?
            if case let .success(.error(message)) = result { refusal = message }
            if case let .success(.array(parts)) = result, parts.count == 2, arrived - sent <= slowest,
               let seconds = parts[0].string.flatMap({ Int64($0) }), let micros = parts[1].string.flatMap({ Int64($0) }) {
                reading = NodeClocks.Reading(
                    microsecondsAtReference: seconds * 1_000_000 + micros - NodeClocks.microseconds(arrived - NodeClocks.reference),
                    taken: sent)
            }
            let (waiters, known) = clocks.lock.withLock {
                if let reading { clocks.readings[node] = reading }
                if refusal != nil { clocks.readings[node] = nil }
                return (clocks.waiting.removeValue(forKey: node) ?? [], clocks.readings[node])
            }
            let answer: NodeClocks.Answer = refusal.map { .refused($0) } ?? known.map { .reading($0) } ?? .none
            for waiter in waiters { waiter(answer) }
        }
    }
}
