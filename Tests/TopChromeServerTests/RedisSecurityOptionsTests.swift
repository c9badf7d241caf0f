import Foundation
import Testing
import Redis
@testable import TopChromeServer

/// `--redis-username` and the TLS options: read like every option, and
/// refused where they would do nothing.
struct RedisSecurityOptionsTests {
    @Test func theUserGoesWithThePasswordIntoTheClientsConfiguration() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("password-\(UUID().uuidString)")
        try "s3cret\n".write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let redis = ["--store", "redis://h:1", "--redis-password-file", file.path]
        let configuration = try serve(redis, ["TOPCHROME_REDIS_USERNAME": "topchrome"])
        #expect(configuration.redis.client.username == "topchrome")
        #expect(configuration.redis.client.password == "s3cret")
        #expect(configuration.redis.client.tls == nil)
        #expect(try serve(redis + ["--redis-username", "flag"], ["TOPCHROME_REDIS_USERNAME": "env"]).redis.username == "flag")
        #expect(throws: ServiceConfiguration.UsageError(description: "--redis-username needs --redis-password-file: AUTH takes the user's password with its name")) {
            try serve(["--store", "redis://h:1", "--redis-username", "topchrome"])
        }
        #expect(throws: ServiceConfiguration.UsageError.self) { try serve(redis + ["--redis-username", "two words"]) }
        #expect(throws: ServiceConfiguration.UsageError.self) { try serve(["--redis-username", "topchrome"]) }
    }

    @Test func tlsOptionsNeedRediss() throws {
        #expect(try serve(["--store", "rediss://127.0.0.1:6380"]).redis.tls?.caFile == nil, "the system's trust store")
        #expect(try serve(["--store", "rediss://127.0.0.1:6380"]).store.description == "rediss://127.0.0.1:6380")
        #expect(throws: ServiceConfiguration.UsageError(description: "--redis-ca-file is for TLS to Redis and does nothing with redis://; use --store rediss://HOST:PORT, or remove it")) {
            try serve(["--store", "redis://h:1", "--redis-ca-file", "/etc/ssl/certs/ca-certificates.crt"])
        }
        #expect(throws: ServiceConfiguration.UsageError(description: "--redis-cert and --redis-key go together")) {
            try serve(["--store", "rediss://h:1", "--redis-cert", "/x.pem"])
        }
        #expect(throws: ServiceConfiguration.UsageError.self) { try serve(["--store", "rediss://h:1", "--redis-ca-file", "/nonexistent.pem"]) }
        #expect(throws: ServiceConfiguration.UsageError.self) { try serve(["--redis-ca-file", "/nonexistent.pem"]) }
        #expect(throws: ServiceConfiguration.UsageError(description: "--store: 'h' needs a port, as in rediss://h:6379 (the form is rediss://HOST:PORT[,HOST:PORT...])")) {
            try serve(["--store", "rediss://h"])
        }
    }

    /// A Sentinel store takes TLS as `rediss-sentinel://`, to the sentinels
    /// and the primary alike; the TLS options with `redis-sentinel://` stop
    /// the start (exit 2) rather than go unused. Its primary still takes
    /// the ACL user.
    @Test func sentinelStoresTakeTLSOnlyAsRedissSentinel() throws {
        let sentinel = ["--store", "redis-sentinel://127.0.0.1:26379/mymaster"]
        #expect(try serve(sentinel).redis.client.tls == nil)
        #expect(try serve(sentinel).store.description == "redis-sentinel://127.0.0.1:26379/mymaster")
        for given in [["--redis-ca-file", "/etc/ssl/certs/ca-certificates.crt"], ["--redis-cert", "/c.pem", "--redis-key", "/k.pem"]] {
            #expect {
                try serve(sentinel + given)
            } throws: { error in
                (error as? ServiceConfiguration.UsageError)?.description.hasSuffix("is for TLS to Redis and does nothing with redis-sentinel://; use --store rediss-sentinel://HOST:PORT/MASTERNAME, or remove it") == true
            }
        }
        let secure = try serve([], ["TOPCHROME_STORE": "rediss-sentinel://127.0.0.1:26379/mymaster"])
        #expect(secure.redis.client.tls != nil && RedisConfiguration.sentinels(of: secure.redis.client).tls != nil)
        #expect(secure.store.description == "rediss-sentinel://127.0.0.1:26379/mymaster")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("password-\(UUID().uuidString)")
        try "s3cret\n".write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let user = try serve(sentinel + ["--redis-username", "topchrome", "--redis-password-file", file.path])
        #expect(user.redis.client.username == "topchrome" && user.redis.client.password == "s3cret")
    }
}
