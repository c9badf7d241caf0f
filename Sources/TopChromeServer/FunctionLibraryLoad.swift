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

    /// On the primaries of `endpoints` (a cluster's, the one Redis named, or
    /// the one the sentinels name), with `configuration`: the user,
    /// password and TLS the service connects with.
    /// The user's permissions are checked on each primary first, for every
    /// command the store sends with `needs` and `keyPrefix`'s keys, and
    /// `FUNCTION LOAD`.
    public init(endpoints: RedisEndpoints, configuration: RedisConfiguration, keyPrefix: String = "topchrome:",
                needs: Set<RedisPermission.Need> = [.always]) {
        let found = RedisPrimaries.of(endpoints, configuration, &failures)
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
            switch RedisPrimaries.ask(node, ["FUNCTION", "LOAD", "REPLACE", ChromeFunctions.library], configuration) {
            case let .success(reply) where reply.string == ChromeFunctions.libraryName:
                loaded.append("loaded \(ChromeFunctions.libraryName) on \(node)")
            case let .success(reply):
                failures.append("\(node) did not load the library: \(RedisPrimaries.words(reply))")
            case let .failure(error):
                failures.append("\(node): \(error)")
            }
        }
    }
}
