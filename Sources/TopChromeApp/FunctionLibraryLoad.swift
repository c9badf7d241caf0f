import Dispatch
import Locking
import Redis
import RedisSessionStore

/// `topchrome redis-functions load`: the function library loaded on every
/// primary by an operator, once per build, so the service itself may run as
/// a Redis user that can only call the functions (no `FUNCTION LOAD`).
/// The service still loads it where a call finds it missing, when it may.
public struct FunctionLibraryLoad: Sendable {
    /// One line per primary: where the library was loaded.
    public var loaded: [String] = []
    /// What failed, in an operator's words.
    public var failures: [String] = []

    /// 0 when every primary has the library, 1 otherwise.
    public var exitStatus: Int32 { failures.isEmpty ? 0 : 1 }

    /// `configuration`: the user, password and TLS the service connects with.
    public init(seeds: [RedisNode], configuration: RedisConfiguration) {
        guard let primaries = Self.primaries(of: seeds, configuration, &failures) else { return }
        for node in primaries {
            switch Self.ask(node, ["FUNCTION", "LOAD", "REPLACE", ChromeFunctions.library], configuration) {
            case let .success(reply) where reply.string == ChromeFunctions.libraryName:
                loaded.append("loaded \(ChromeFunctions.libraryName) on \(node)")
            case let .success(reply):
                failures.append("\(node) did not load the library: \(Self.words(reply))")
            case let .failure(error):
                failures.append("\(node): \(error)")
            }
        }
    }

    /// The primaries to load on: a cluster's, as any seed's `CLUSTER SLOTS`
    /// tells them (a seed may be a replica), or the one Redis named.
    private static func primaries(of seeds: [RedisNode], _ configuration: RedisConfiguration,
                                  _ failures: inout [String]) -> [RedisNode]? {
        for seed in seeds {
            switch ask(seed, ["CLUSTER", "SLOTS"], configuration) {
            case let .success(.array(ranges)):
                var nodes: [RedisNode] = []
                for case let .array(range) in ranges where range.count >= 3 {
                    guard case let .array(primary) = range[2], primary.count >= 2, let host = primary[0].string,
                          case let .integer(port) = primary[1] else { continue }
                    let node = RedisNode(host: host.isEmpty ? seed.host : host, port: Int(port))
                    if !nodes.contains(node) { nodes.append(node) }
                }
                return nodes
            case let .success(.error(message)) where message.contains("cluster support disabled"):
                return [seed]
            case let .success(other):
                failures.append("\(seed) answered CLUSTER SLOTS with \(words(other))")
            case let .failure(error):
                failures.append("\(seed): \(error)")
            }
        }
        return nil
    }

    /// One command on a connection of its own, waited for.
    private static func ask(_ node: RedisNode, _ command: [String],
                            _ configuration: RedisConfiguration) -> Result<RESPValue, RedisError> {
        let connection = RedisConnection(to: node, configuration: configuration)
        defer { connection.close() }
        let answer = Answer()
        let done = DispatchSemaphore(value: 0)
        connection.send(command.map { Array($0.utf8) }, deadline: .now + configuration.commandTimeout) { reply in
            answer.set(reply)
            done.signal()
        }
        done.wait()
        return answer.value ?? .failure(.timeout)
    }

    private static func words(_ reply: RESPValue) -> String {
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
