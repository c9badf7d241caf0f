import Dispatch
import Locking
import Redis

/// The primaries an operator command works on (`redis-functions`,
/// `check-config`, the start's checks), found as the service's client finds
/// them, with the Redis library's own readers of `CLUSTER SLOTS` and of a
/// sentinel's answer; unlike the client, it says why a node did not answer.
enum RedisPrimaries {
    /// A cluster's primaries, as any seed's `CLUSTER SLOTS` tells them (a
    /// seed may be a replica), the one Redis named, or the one the sentinels
    /// name; nil when none could be found, `failures` saying why.
    static func of(_ endpoints: RedisEndpoints, _ configuration: RedisConfiguration,
                   _ failures: inout [String]) -> [RedisNode]? {
        switch endpoints.nodes {
        case let .sentinels(sentinels, masterName):
            let answer = primary(named: masterName, sentinels: sentinels, for: configuration)
            failures += answer.primary == nil ? answer.failures : []
            return answer.primary.map { [$0] }
        case let .seeds(seeds):
            return primaries(of: seeds, configuration, &failures)
        }
    }

    private static func primaries(of seeds: [RedisNode], _ configuration: RedisConfiguration,
                                  _ failures: inout [String]) -> [RedisNode]? {
        for seed in seeds {
            switch ask(seed, ["CLUSTER", "SLOTS"], configuration) {
            case let .success(.error(message)) where message.contains("cluster support disabled"):
                return [seed]
            case let .success(reply):
                guard let map = SlotMap(reply, answeredBy: seed) else {
                    failures.append("\(seed) answered CLUSTER SLOTS with \(words(reply))")
                    continue
                }
                return map.nodes.sorted { $0.description < $1.description }
            case let .failure(error):
                failures.append("\(seed): \(error)")
            }
        }
        return nil
    }

    /// The primary that the first sentinel to answer names for `masterName`
    /// (with the sentinels' own `AUTH`, and TLS for `rediss-sentinel://`,
    /// as the service asks); else why none did, and whether a sentinel
    /// that answered did not know the name.
    static func primary(named masterName: String, sentinels: [RedisNode],
                        for client: RedisConfiguration) -> (primary: RedisNode?, failures: [String], unknownName: Bool) {
        let configuration = RedisConfiguration.sentinels(of: client)
        var failures: [String] = []
        var unknownName = false
        for sentinel in sentinels {
            switch ask(sentinel, SentinelResolver.primaryQuery(masterName), configuration) {
            case let .success(reply):
                if let primary = SentinelResolver.primary(in: reply) { return (primary, [], false) }
                if reply == .null {
                    unknownName = true
                    failures.append("sentinel \(sentinel) does not know \(masterName)")
                } else {
                    failures.append("sentinel \(sentinel) answered \(words(reply))")
                }
            case let .failure(error):
                failures.append("sentinel \(sentinel): \(error)")
            }
        }
        return (nil, failures, unknownName)
    }

    /// A command with no reply, and why its connection failed, when it did.
    struct Failure: Error, CustomStringConvertible {
        let error: RedisError
        let reason: String?
        var description: String { reason ?? "\(error)" }
    }

    static func ask(_ node: RedisNode, _ command: [String],
                    _ configuration: RedisConfiguration) -> Result<RESPValue, Failure> {
        ask(node, command.map { Array($0.utf8) }, configuration)
    }

    /// One command on a connection of its own, waited for.
    static func ask(_ node: RedisNode, _ command: [[UInt8]],
                    _ configuration: RedisConfiguration) -> Result<RESPValue, Failure> {
        let connection = RedisConnection(to: node, configuration: configuration)
        defer { connection.close() }
        let answer = Answer()
        let done = DispatchSemaphore(value: 0)
        connection.send(command, deadline: .now + configuration.commandTimeout) { reply in
            answer.set(reply)
            done.signal()
        }
        done.wait()
        return (answer.value ?? .failure(.timeout)).mapError { error in
            // Why the connection failed (a refused AUTH, a TLS reason) says more than the command's error.
            Failure(error: error, reason: connection.lastFailureReason)
        }
    }

    static func words(_ reply: RESPValue) -> String {
        switch reply {
        case let .error(message): message
        default: reply.string ?? "\(reply)"
        }
    }

    /// The reply, set on the connection's I/O thread and read after it.
    private final class Answer: @unchecked Sendable {
        private let lock = PthreadLock()
        private var result: Result<RESPValue, RedisError>?
        func set(_ value: Result<RESPValue, RedisError>) { lock.withLock { result = value } }
        var value: Result<RESPValue, RedisError>? { lock.withLock { result } }
    }
}
