import Redis

/// Whether a Redis node refuses writes when no replica takes them
/// (`min-replicas-to-write`): without it, a primary that Sentinel or the
/// cluster replaced keeps acknowledging writes that its conversion to a
/// replica then drops (docs/redis.md, "A failover that loses no
/// acknowledged write").
enum ReplicaRequirementCheck: Equatable {
    /// Writes need this many replicas (1 or more).
    case required(Int)
    /// `min-replicas-to-write 0`: the node takes writes with no replica.
    case notRequired
    /// Redis did not say (a user without `+config|get`, no answer).
    case unknown(String)

    static func check(_ node: RedisNode, _ configuration: RedisConfiguration) -> ReplicaRequirementCheck {
        let connection = RedisConnection(to: node, configuration: configuration)
        defer { connection.close() }
        let replies = RedisPermissionCheck.Replies(count: 1)
        connection.send(["CONFIG", "GET", "min-replicas-to-write"], deadline: .now + configuration.commandTimeout) { replies.set(0, $0) }
        switch replies.wait().first ?? nil {
        case .success(.array(let pair))?:
            guard pair.count == 2, let value = pair[1].string.flatMap({ Int($0) }) else { return .unknown("CONFIG GET answered \(pair)") }
            return value > 0 ? .required(value) : .notRequired
        case .success(.error(let message))?:
            return .unknown(String(message.prefix(160)))
        case .success(let other)?:
            return .unknown("CONFIG GET answered \(other)")
        case .failure(let error)?:
            return .unknown("no answer (\(error))")
        case nil:
            return .unknown("no answer in time")
        }
    }
}
