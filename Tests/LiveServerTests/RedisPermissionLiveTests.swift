import Foundation
import RedisSessionStore
import RedisTestSupport
import Testing

/// A Redis user lacking a command the store sends fails only the requests
/// that send it, once they come: `check-config`, `redis-functions load` and
/// the start ask Redis first (`ACL DRYRUN`) and name what is missing.
@Suite struct RedisPermissionLiveTests {
    /// A user with docs/redis.md's ACL, less `lacking`, plus `extra`; and the
    /// flags that connect as it.
    static func user(_ redis: RedisServer, _ name: String, lacking: [String] = [], extra: [String] = []) throws -> [String] {
        let acl = try TestPKI.documentedACL(password: "secret").filter { !lacking.contains($0) }
        try redis.cli(acl.map { $0 == "topchrome" ? name : $0 } + extra)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("redis-password-\(UUID().uuidString)")
        try Data("secret".utf8).write(to: file)
        return ["--store", "redis://127.0.0.1:\(redis.port)", "--redis-username", name, "--redis-password-file", file.path]
    }

    @Test func checkConfigNamesTheCommandsTheUserLacks() throws {
        let redis = try RedisServer()
        let lacking = try Self.user(redis, "lacking", lacking: ["+time", "+hset"], extra: ["+acl|dryrun"])
        let refused = try CheckConfigTests.check(lacking)
        #expect(refused.status == 2, "\(refused.output) \(refused.errors)")
        #expect(refused.errors.contains("grant +hset +time"), "\(refused.errors)")

        let whole = try Self.user(redis, "whole", extra: ["+acl|dryrun"])
        let allowed = try CheckConfigTests.check(whole)
        #expect(allowed.status == 0, "\(allowed.errors)")
        #expect(allowed.output.contains("may run every command the store sends"), "\(allowed.output)")

        // docs/redis.md's user may not ask: said, not refused.
        let documented = try CheckConfigTests.check(try Self.user(redis, "documented"))
        #expect(documented.status == 0, "\(documented.errors)")
        #expect(documented.output.contains("permissions could not be checked"), "\(documented.output)")
    }

    @Test func theStartRefusesAUserLackingACommand() throws {
        let redis = try RedisServer()
        let lacking = try Self.user(redis, "lacking", lacking: ["+spublish"], extra: ["+acl|dryrun"])
        let start = try CommandLineTests.run(["--port", "0"] + lacking)
        #expect(start.status == 2, "\(start.output) \(start.errors)")
        #expect((start.output + start.errors).contains("grant +spublish"), "\(start.output) \(start.errors)")
    }

    @Test func loadingNamesWhatTheUserLacks() throws {
        let redis = try RedisServer()
        let lacking = try Self.user(redis, "loader", lacking: ["+del"], extra: ["+acl|dryrun", "+function|load"])
        let load = try CommandLineTests.run(["redis-functions", "load"] + lacking)
        #expect(load.status == 2, "\(load.output) \(load.errors)")
        #expect(load.errors.contains("grant +del"), "\(load.errors)")
        #expect(load.output.contains("loaded \(ChromeFunctions.libraryName)"), "what it may do, it does")
        let cannotLoad = try Self.user(redis, "caller", extra: ["+acl|dryrun"])
        let refused = try CommandLineTests.run(["redis-functions", "load"] + cannotLoad)
        #expect(refused.status == 2 && refused.errors.contains("grant +function|load"), "\(refused.errors)")
    }
}
