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

    /// Commands the user may not run (`ACL DRYRUN`), one line per primary:
    /// configuration to fix.
    public var problems: [String] = []
    /// What could not be checked, for the operator to know.
    public var notes: [String] = []

    /// 0 when every primary has the library, 2 when the user lacks a
    /// command the store sends, 1 otherwise.
    public var exitStatus: Int32 { !problems.isEmpty ? 2 : failures.isEmpty ? 0 : 1 }

    /// On the primaries of `storage` (a cluster's, the one Redis named, or
    /// the one the sentinels name), with `configuration`: the user,
    /// password and TLS the service connects with.
    /// The user's permissions are checked on each primary first, for every
    /// command the store sends with `needs` and `keyPrefix`'s keys, and
    /// `FUNCTION LOAD`.
    public init(storage: SessionStorage, configuration: RedisConfiguration, keyPrefix: String = "topchrome:",
                needs: Set<RedisPermission.Need> = [.always]) {
        let found: [RedisNode]?
        switch storage {
        case let .redisSentinel(sentinels, masterName):
            let answer = Self.primary(named: masterName, sentinels: sentinels, for: configuration)
            failures += answer.primary == nil ? answer.failures : []
            found = answer.primary.map { [$0] }
        case let .redis(seeds):
            found = Self.primaries(of: seeds, configuration, &failures)
        case .memory:
            found = nil
            failures.append("the memory store has no function library")
        }
        guard let primaries = found else { return }
        for node in primaries {
            switch RedisPermissionCheck.check(node, configuration, keyPrefix: keyPrefix, needs: needs.union([.loadingTheLibrary])) {
            case .allowed:
                break
            case let .missing(grants):
                problems.append(RedisPermissionCheck.lacking(grants, user: configuration.username, node: node))
                if grants.contains("+function|load") { continue }
            case let .unknown(reason):
                notes.append("\(node): the user's permissions could not be checked (\(reason))")
            }
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
    static func primaries(of seeds: [RedisNode], _ configuration: RedisConfiguration,
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
            switch ask(sentinel, ["SENTINEL", "get-master-addr-by-name", masterName], configuration) {
            case let .success(.array(parts)) where parts.count == 2:
                if let host = parts[0].string, let port = parts[1].string.flatMap({ Int($0) }), (1...65535).contains(port) {
                    return (RedisNode(host: host, port: port), [], false)
                }
                failures.append("sentinel \(sentinel) answered \(words(.array(parts)))")
            case .success(.null):
                unknownName = true
                failures.append("sentinel \(sentinel) does not know \(masterName)")
            case let .success(other):
                failures.append("sentinel \(sentinel) answered \(words(other))")
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

    /// One command on a connection of its own, waited for.
    static func ask(_ node: RedisNode, _ command: [String],
                            _ configuration: RedisConfiguration) -> Result<RESPValue, Failure> {
        let connection = RedisConnection(to: node, configuration: configuration)
        defer { connection.close() }
        let answer = Answer()
        let done = DispatchSemaphore(value: 0)
        connection.send(command.map { Array($0.utf8) }, deadline: .now + configuration.commandTimeout) { reply in
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
