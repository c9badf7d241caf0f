import Dispatch
import Locking
import Redis
import RedisSessionStore

/// Whether the Redis user may run every command the store sends, asked of
/// Redis itself (`ACL DRYRUN`, Redis 7.0): a user lacking one would fail
/// some requests only, and only once they come (a change, a watch, a
/// cluster's redirection), so `check-config`, `redis-functions load` and
/// the start ask first and name what is missing.
enum RedisPermissionCheck: Equatable {
    case allowed
    /// The grants the user lacks, as `ACL SETUSER` takes them (`+time`).
    case missing([String])
    /// Redis did not say: the user may not run `ACL DRYRUN` itself, a Redis
    /// older than 7.0, or no answer.
    case unknown(String)

    /// Asks `node` about every command of `needs`, for `configuration`'s user.
    static func check(_ node: RedisNode, _ configuration: RedisConfiguration, keyPrefix: String,
                      needs: Set<RedisPermission.Need>) -> RedisPermissionCheck {
        let user = configuration.username ?? "default"
        let permissions = RedisPermissions.all(keyPrefix: keyPrefix)
        let connection = RedisConnection(to: node, configuration: configuration)
        defer { connection.close() }
        let replies = Replies(count: permissions.count + 1)
        let deadline = ContinuousClock.now + configuration.commandTimeout
        connection.send(["INFO", "cluster"], deadline: deadline) { replies.set(0, $0) }
        for (index, permission) in permissions.enumerated() {
            connection.send(["ACL", "DRYRUN", user] + permission.dryRun, deadline: deadline) { replies.set(index + 1, $0) }
        }
        let answers = replies.wait()
        let cluster = answers[0].flatMap { try? $0.get().string }?.contains("cluster_enabled:1") ?? true
        let wanted = needs.union(cluster ? [.cluster] : [])
        var missing: [String] = []
        for (permission, answer) in zip(permissions, answers.dropFirst()) where wanted.contains(permission.need) {
            switch answer {
            case .success(.simple)?:
                continue
            case .success(.bulk)?:
                // DRYRUN's refusal is a bulk string saying why.
                missing.append(permission.grant)
            case let .success(.error(message))?:
                return .unknown("Redis did not answer ACL DRYRUN for \(user): \(message.prefix(160))")
            case let .success(other)?:
                return .unknown("Redis answered ACL DRYRUN with \(other)")
            case let .failure(error)?:
                return .unknown("ACL DRYRUN got no answer (\(error))")
            case nil:
                return .unknown("ACL DRYRUN got no answer in time")
            }
        }
        return missing.isEmpty ? .allowed : .missing(missing)
    }

    /// The same, for the service as `configuration` sets it up.
    static func check(_ node: RedisNode, _ configuration: ServiceConfiguration) -> RedisPermissionCheck {
        check(node, configuration.redis.client, keyPrefix: configuration.redis.keyPrefix, needs: configuration.redis.permissionsNeeded)
    }

    /// One line for an operator, naming what to grant.
    static func lacking(_ grants: [String], user: String?, node: RedisNode) -> String {
        "Redis user \(user ?? "default") on \(node) may not run every command the store sends: grant \(grants.joined(separator: " "))"
            + " (docs/redis.md gives the least ACL)"
    }

    /// Replies set on the connection's I/O thread, awaited here.
    final class Replies: @unchecked Sendable {
        private let lock = PthreadLock()
        private let done = DispatchSemaphore(value: 0)
        private var values: [Result<RESPValue, RedisError>?]
        private var left: Int

        init(count: Int) {
            values = Array(repeating: nil, count: count)
            left = count
        }

        func set(_ index: Int, _ value: Result<RESPValue, RedisError>) {
            let last = lock.withLock {
                values[index] = value
                left -= 1
                return left == 0
            }
            if last { done.signal() }
        }

        /// Every reply: each command fails by its deadline, so all come.
        func wait() -> [Result<RESPValue, RedisError>?] {
            done.wait()
            return lock.withLock { values }
        }
    }
}
