import Redis

/// The lines an operator reads when Redis goes away, refuses the service
/// or comes back: one per change of a connection, never one per request
/// or per retry (the Redis client reports only changes).
enum RedisConnectionLog {
    static func lines(to logger: Logger) -> @Sendable (RedisConnectionEvent) -> Void {
        { event in
            let node = LogValue.string(event.node.description)
            let connection = LogValue.string(event.isSubscriber ? "subscriptions" : "commands")
            switch event.change {
            case .connected:
                logger.log(.debug, "Redis connected", ["node": node, "connection": connection])
            case let .unreachable(reason):
                logger.log(.warn, "Redis unreachable; retrying", ["node": node, "connection": connection, "reason": .string(reason)])
            case let .lost(reason):
                logger.log(.warn, "Redis connection lost; retrying", ["node": node, "connection": connection, "reason": .string(reason)])
            case let .refused(reason):
                logger.log(.error, "Redis refused the connection; check " + RedisRefusalAdvice.check(reason.trimmingPrefix("setup command refused: ").description),
                           ["node": node, "connection": connection, "reason": .string(reason)])
            case .recovered:
                logger.log(.info, "Redis reachable again", ["node": node, "connection": connection])
            }
        }
    }
}
