import Foundation
import RedisSessionStore
import RedisTestSupport
import Testing
import TopChromeTesting

/// Faults that fail every request while every connection is up: Redis
/// answers, with an error. Each is counted by its code, logged when it
/// starts and stops, and where no change can succeed, `/readyz` says so
/// (the reason to a caller with the token).
@Suite struct RedisRefusalLiveTests {
    static let token = "readiness-token"

    /// The server as an operator runs it, as `user` (docs/redis.md's ACL
    /// less `lacking`) when given one.
    static func serve(_ redis: RedisServer, as user: String? = nil, lacking: [String] = []) throws
        -> (server: ProcessLifecycleTests.RunningServer, client: TestHTTPClient) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("refusal-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let tokenFile = folder.appendingPathComponent("token")
        try Data(token.utf8).write(to: tokenFile)
        var arguments = ["--port", "0", "--threads", "1", "--store", "redis://127.0.0.1:\(redis.port)", "--auth-token-file", tokenFile.path]
        if let user {
            // Loaded by an operator: the user may not load it.
            try redis.cli(["FUNCTION", "LOAD", "REPLACE", ChromeFunctions.library])
            arguments += Array(try RedisPermissionLiveTests.user(redis, user, lacking: lacking).dropFirst(2))
        }
        let server = try ProcessLifecycleTests.RunningServer(arguments)
        _ = try server.waitUntilListening()
        return (server, try TestHTTPClient(port: server.port))
    }

    static let bearer = [("Authorization", "Bearer \(token)")]

    static func metric(_ client: TestHTTPClient, _ series: String) -> Int {
        guard let text = try? client.request("GET", "/metrics", headers: bearer).text,
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix(series + " ") }) else { return -1 }
        return Int(line.split(separator: " ").last ?? "") ?? -1
    }

    static func logged(_ server: ProcessLifecycleTests.RunningServer, _ message: String, code: String) -> Bool {
        server.log.split(separator: "\n").contains { $0.contains(message) && $0.contains(code) }
    }

    /// `FUNCTION FLUSH` where the service's user may not load the library:
    /// every request fails, so the replica is not ready, says why under the
    /// token, counts and logs the refusals; it is ready again once the
    /// library is back, and logs that the refusals stopped.
    @Test func aLibraryGoneThatTheUserMayNotLoad() throws {
        let redis = try RedisServer()
        let (server, client) = try Self.serve(redis, as: "caller")
        let id = try client.json("POST", "/v1/sessions", "", headers: Self.bearer).json["id"] as? String
        #expect(id != nil)
        #expect(try client.request("GET", "/readyz").status == 200)
        try redis.cli(["FUNCTION", "FLUSH"])

        #expect(try client.json("POST", "/v1/sessions/\(id ?? "")/scroll", #"{"contentOffsetY": 300}"#, headers: Self.bearer).status == 503)
        #expect(eventually(within: 10) { (try? client.request("GET", "/readyz").status) == 503 })
        let told = try client.request("GET", "/readyz", headers: Self.bearer)
        #expect(told.status == 503 && told.text.contains("function library is missing"), "\(told.text)")
        #expect(!(try client.request("GET", "/readyz").text.contains("library")), "the reason is for the token's holder")
        #expect(Self.metric(client, "topchrome_store_up") == 0)
        #expect(Self.metric(client, #"topchrome_redis_errors_total{code="NOPERM"}"#) >= 1)
        #expect(Self.metric(client, #"topchrome_redis_errors_total{code="ERR"}"#) >= 1)
        #expect(eventually { Self.logged(server, "Redis answers with errors", code: "NOPERM") }, "\(server.log)")

        try redis.cli(["FUNCTION", "LOAD", "REPLACE", ChromeFunctions.library])
        #expect(eventually(within: 15) { (try? client.request("GET", "/readyz").status) == 200 })
        #expect(try client.json("POST", "/v1/sessions/\(id ?? "")/scroll", #"{"contentOffsetY": 300}"#, headers: Self.bearer).status == 200)
        #expect(eventually(within: 30) { Self.logged(server, "Redis no longer answers with errors", code: "NOPERM") }, "\(server.log)")
    }

    /// A user lacking a command the library runs: not ready, naming it.
    @Test func aCommandTheUserLacks() throws {
        let redis = try RedisServer()
        let (server, client) = try Self.serve(redis, as: "nohset", lacking: ["+hset"])
        #expect(try client.json("POST", "/v1/sessions", "", headers: Self.bearer).status == 503)
        #expect(eventually(within: 10) { (try? client.request("GET", "/readyz", headers: Self.bearer).text.contains("may not run HSET")) == true })
        #expect(Self.metric(client, #"topchrome_redis_errors_total{code="ERR"}"#) >= 1)
        #expect(eventually { Self.logged(server, "Redis answers with errors", code: "ERR") }, "\(server.log)")
    }

    /// Without `+time` a change's deadline cannot be had: 503 of its own
    /// type, nothing changed, the refusal counted and logged.
    @Test func aDeadlineThatCannotBeHadIsAnError() throws {
        let redis = try RedisServer()
        let (server, client) = try Self.serve(redis, as: "notime", lacking: ["+time"])
        let refused = try client.json("POST", "/v1/sessions", "", headers: Self.bearer)
        #expect(refused.status == 503)
        #expect(try refused.json["type"] as? String == "urn:topchrome:problem:deadline-unknown", "\(refused.text)")
        #expect(refused.header("Retry-After") != nil)
        #expect(try redis.cli(["DBSIZE"]).trimmingCharacters(in: .whitespacesAndNewlines) == "0", "nothing was made")
        #expect(Self.metric(client, #"topchrome_redis_errors_total{code="NOPERM"}"#) >= 1)
        #expect(eventually { Self.logged(server, "Redis answers with errors", code: "NOPERM") }, "\(server.log)")
        #expect(eventually(within: 10) { (try? client.request("GET", "/readyz", headers: Self.bearer).text.contains("TIME")) == true })
    }

    /// A full Redis and one short of replicas refuse changes but serve
    /// reads: counted and logged by code, and the replica stays ready.
    @Test func fullAndShortOfReplicasAreCountedAndLogged() throws {
        let redis = try RedisServer()
        let (server, client) = try Self.serve(redis)
        let id = try client.json("POST", "/v1/sessions", "", headers: Self.bearer).json["id"] as? String ?? ""
        for (setting, code) in [(["maxmemory", "1"], "OOM"), (["min-replicas-to-write", "1"], "NOREPLICAS")] {
            try redis.cli(["CONFIG", "SET"] + setting)
            #expect(try client.json("POST", "/v1/sessions", "", headers: Self.bearer).status == 503)
            #expect(Self.metric(client, "topchrome_redis_errors_total{code=\"\(code)\"}") >= 1)
            #expect(eventually { Self.logged(server, "Redis answers with errors", code: code) }, "\(server.log)")
            #expect(try client.request("GET", "/v1/sessions/\(id)", headers: Self.bearer).status == 200)
            #expect(try client.request("GET", "/readyz").status == 200)
            try redis.cli(["CONFIG", "SET", setting[0], "0"])
        }
    }
}
