import Foundation
import Redis
import RedisTestSupport
import TopChromeServer
import TopChromeTesting

/// A real TopChrome server on a free loopback port, stopped when released.
///
/// With `TOPCHROME_TEST_STORE=redis` in the environment, servers whose
/// test does not need the memory store keep their sessions in a Redis the
/// tests start (one for the run, a key prefix per server): the v1 live
/// tests then hold for the Redis store as well. With
/// `TOPCHROME_TEST_STORE=rediss`, that Redis speaks TLS only (a test CA)
/// and the servers connect as an ACL user with exactly the ACL docs/redis.md
/// gives operators, and the library loaded beforehand, as an operator would.
final class LiveServer: Sendable {
    let service: TopChromeService
    var port: Int { service.port }

    /// - Parameter memoryOnly: the test reaches into the memory store, or
    ///   needs what only it has (a state file, a session count).
    init(memoryOnly: Bool = false, _ configure: (inout ServiceConfiguration) -> Void = { _ in }) throws {
        var configuration = ServiceConfiguration()
        configuration.http.port = 0
        configuration.http.threads = 2
        // A test is one address creating sessions far faster than any app;
        // the tests of the limit set it.
        configuration.limits.createRate = 0
        let shared = ProcessInfo.processInfo.environment["TOPCHROME_TEST_STORE"]
        if !memoryOnly, shared == "redis" {
            configuration.store = .redis(.seeds([try Self.sharedRedis.get().node]))
            configuration.redis.keyPrefix = "live\(UInt64.random(in: 0...UInt64.max)):"
        } else if !memoryOnly, shared == "rediss" {
            let redis = try Self.sharedTLSRedis.get()
            configuration.store = .redis(.seeds([redis.node], transport: .tls))
            configuration.redis.tls = try RedisTLS(caFile: redis.pki?.caFile)
            configuration.redis.username = "topchrome"
            configuration.redis.password = Self.aclPassword
            // Under the ACL's `topchrome:` prefix, a server's own below it.
            configuration.redis.keyPrefix = "topchrome:live\(UInt64.random(in: 0...UInt64.max)):"
        }
        if !memoryOnly, shared == "redis" || shared == "rediss" {
            // The v1 tests are about the API, not about Redis's speed: with
            // the whole suite sharing two cores, a watcher's channel once took
            // longer than the default second to be confirmed (a 503 where
            // the test waited for a 304). Tests of timeouts set their own.
            configuration.redis.timeout = 5
        }
        configure(&configuration)
        service = TopChromeService(configuration: configuration)
        try service.start()
        if case .redis = configuration.store, !memoryOnly, shared == "redis" || shared == "rediss" {
            guard waitUntilReady() else { throw TestClientError.malformed("the Redis-backed server did not become ready") }
        }
    }

    /// A server on Redis at `store`, with its own key prefix (replicas of one service share one).
    convenience init(store: SessionStorage, keyPrefix: String, _ configure: (inout ServiceConfiguration) -> Void = { _ in }) throws {
        try self.init(memoryOnly: true) { configuration in
            configuration.store = store
            configuration.redis.keyPrefix = keyPrefix
            configure(&configuration)
        }
    }

    private static let sharedRedis = Result { try RedisServer() }

    static let aclPassword = "acl-test-password"

    /// The TLS Redis of `TOPCHROME_TEST_STORE=rediss`: the documented ACL user
    /// made, and the library loaded over TLS by `redis-functions load`'s code.
    private static let sharedTLSRedis = Result { () throws -> RedisServer in
        let redis = try RedisServer(tls: TestPKI())
        try redis.cli(TestPKI.documentedACL(password: aclPassword))
        var admin = RedisConfiguration()
        admin.tls = try RedisTLS(caFile: redis.pki?.caFile)
        admin.commandTimeout = .seconds(5)
        let load = FunctionLibraryLoad(endpoints: .seeds([redis.node], transport: .tls), configuration: admin)
        guard load.exitStatus == 0 else { throw RedisTestSetupError(description: "\(load.failures)") }
        return redis
    }

    deinit { service.stop() }

    /// Waits until `/readyz` says 200: a Redis-backed server is ready once it reaches Redis.
    func waitUntilReady(within seconds: Double = 15) -> Bool {
        eventually(within: seconds) { (try? client().request("GET", "/readyz").status) == 200 }
    }

    func client() throws -> TestHTTPClient {
        try TestHTTPClient(port: port)
    }

    /// Creates a session and returns its id.
    /// The session's ETag now, as a client that read it holds it.
    func etag(_ id: String) throws -> String {
        guard let etag = try client().request("GET", "/v1/sessions/\(id)").header("ETag") else { throw TestClientError.malformed("no ETag") }
        return etag
    }

    func createSession(inset: Double? = nil) throws -> String {
        let response = try client().json("POST", "/v1/sessions", inset.map { #"{"inset":\#($0)}"# } ?? "")
        guard response.status == 201, let id = try response.json["id"] as? String else {
            throw TestClientError.malformed(response.text)
        }
        return id
    }
}

/// The package's top folder, for files the server must serve as they are.
let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
