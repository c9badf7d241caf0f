import Locking

/// The replies to two commands pipelined on one connection, handed over
/// together once both came: one answer read from two views the node held
/// at the same moment (it runs a connection's pipelined commands back to
/// back). Their completions may run in either order when the connection
/// drops between the two sends.
final class ReplyPair: @unchecked Sendable {
    typealias Reply = Result<RESPValue, RedisError>

    private let lock = PthreadLock()
    private var first: Reply?
    private var second: Reply?
    private let both: @Sendable (Reply, Reply) -> Void

    init(_ both: @escaping @Sendable (Reply, Reply) -> Void) {
        self.both = both
    }

    func first(_ reply: Reply) {
        let pair: (Reply, Reply)? = lock.withLock {
            first = reply
            return second.map { (reply, $0) }
        }
        if let pair { both(pair.0, pair.1) }
    }

    func second(_ reply: Reply) {
        let pair: (Reply, Reply)? = lock.withLock {
            second = reply
            return first.map { ($0, reply) }
        }
        if let pair { both(pair.0, pair.1) }
    }
}
