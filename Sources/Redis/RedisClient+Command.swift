/// A command on its way through a `RedisClient`: where it goes, until
/// when, whom it answers, and how often it was sent again.
extension RedisClient {
    struct Command: Sendable {
        let request: RESPRequest
        let slot: Int?
        let deadline: ContinuousClock.Instant
        let reply: Reply
        /// Running it twice does what running it once does (a read): sent
        /// once more when its connection drops while it is out.
        var idempotent = false
        /// Times it was sent again after a node could not serve for a moment.
        var retries = 0
        /// Why it was last sent again (`TRYAGAIN`, `CLUSTERDOWN`): what the
        /// caller of a read learns if the deadline passes while it is out
        /// once more, for that says more than a bare timeout.
        var lastRefusal: RedisError?
        /// Sent again after its connection dropped with it in flight: not a
        /// second time, but its node's reconnection is waited for.
        var resentAfterLoss = false

        var hasFollowUp: Bool {
            if case .followedUp = reply { true } else { false }
        }

        /// Hands the caller its result, with no follow-up.
        func finish(_ result: Result<RESPValue, RedisError>) {
            switch reply {
            case let .plain(completion): completion(result)
            case let .followedUp(_, completion): completion(result, nil)
            }
        }
    }

    enum Reply: Sendable {
        case plain(RedisCompletion)
        case followedUp(@Sendable (RESPValue) -> FollowUp?, FollowUpCompletion)
    }

    /// A second command, for the connection that answered the first.
    public struct FollowUp: Sendable {
        public let arguments: [[UInt8]]
        public let deadline: ContinuousClock.Instant

        public init(_ arguments: [[UInt8]], deadline: ContinuousClock.Instant) {
            self.arguments = arguments
            self.deadline = deadline
        }
    }

    /// The first command's result, and the follow-up's (nil when none was sent).
    public typealias FollowUpCompletion = @Sendable (Result<RESPValue, RedisError>, Result<RESPValue, RedisError>?) -> Void
}
