import Foundation
import Redis
import RedisSessionStore
import RedisTestSupport
import Testing
import TopChromeServer

/// The function library as operators of a locked-down Redis meet it: loaded
/// once by `topchrome redis-functions load`, called by a user who may not
/// load it, and loaded by the service itself where a call finds it missing.
@Suite struct FunctionLibraryLiveTests {
    @Test func anOperatorLoadsItAndTheServiceNeedsNoRightToLoad() throws {
        let redis = try RedisServer()
        let load = try CommandLineTests.run(["redis-functions", "load", "--store", "redis://127.0.0.1:\(redis.port)"])
        #expect(load.status == 0, "\(load.errors)")
        #expect(load.output == "loaded \(ChromeFunctions.libraryName) on 127.0.0.1:\(redis.port)\n", "\(load.output)")
        // The service's user may call the functions, not load them.
        _ = try redisCLI(port: redis.port, "ACL", "SETUSER", "default", "-function")
        #expect(try redisCLI(port: redis.port, "FUNCTION", "LIST").contains("NOPERM"))

        let server = try LiveServer(store: .redis(.seeds([redis.node])), keyPrefix: "locked:")
        #expect(server.waitUntilReady(), "a user who may not load the library is no reason to refuse a connection")
        let id = try server.createSession()
        #expect(try server.client().json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 300}"#).status == 200)
        #expect(try server.client().request("GET", "/v1/sessions/\(id)").json["isRevealed"] as? Bool == false)
    }

    /// Each build loads its own library: `list` shows those left by older
    /// builds beside this one's, `delete-unused` deletes them and nothing else.
    @Test func librariesOfOlderBuildsAreListedAndDeleted() throws {
        let redis = try RedisServer()
        let store = ["--store", "redis://127.0.0.1:\(redis.port)"]
        #expect(try CommandLineTests.run(["redis-functions", "load"] + store).status == 0)
        let old = "topchrome_0123456789abcdef"
        try redis.cli(["FUNCTION", "LOAD", ChromeFunctions.library.replacing(ChromeFunctions.libraryName, with: old)])
        try redis.cli(["FUNCTION", "LOAD", "#!lua name=someone_else\nredis.register_function('f', function() return 1 end)"])
        let node = "127.0.0.1:\(redis.port)"

        let list = try CommandLineTests.run(["redis-functions", "list"] + store)
        #expect(list.status == 0, "\(list.errors)")
        #expect(list.output == "\(node) \(old)\n\(node) \(ChromeFunctions.libraryName) (this build)\n"
            || list.output == "\(node) \(ChromeFunctions.libraryName) (this build)\n\(node) \(old)\n", "\(list.output)")

        let deleted = try CommandLineTests.run(["redis-functions", "delete-unused"] + store)
        #expect(deleted.status == 0, "\(deleted.errors)")
        #expect(deleted.output.contains("\(node) \(old) deleted"), "\(deleted.output)")
        let left = try redis.cli(["FUNCTION", "LIST"])
        #expect(!left.contains(old) && left.contains(ChromeFunctions.libraryName) && left.contains("someone_else"), "\(left)")
    }

    /// Without an operator's load, the first call on a primary loads it.
    @Test func theServiceLoadsItWhereACallFindsItMissing() throws {
        let redis = try RedisServer()
        let server = try LiveServer(store: .redis(.seeds([redis.node])), keyPrefix: "lazy:")
        #expect(server.waitUntilReady())
        #expect(!(try redisCLI(port: redis.port, "FUNCTION", "LIST")).contains(ChromeFunctions.libraryName), "not on connecting")
        let id = try server.createSession()
        #expect(try server.client().request("GET", "/v1/sessions/\(id)").status == 200)
        #expect(try redisCLI(port: redis.port, "FUNCTION", "LIST").contains(ChromeFunctions.libraryName))
    }

    /// On a cluster, the library goes to every primary the slot map names,
    /// asked of the first seed, and to no replica, even a replica seed.
    @Test func onAClusterItIsLoadedOnEveryPrimary() throws {
        let cluster = try RedisClusterFixture.shared()
        let primaries = Set(try cluster.primaries().map(\.node))
        let replicas = cluster.seeds.filter { !primaries.contains($0) }
        var admin = RedisConfiguration()
        admin.commandTimeout = .seconds(5)
        let load = FunctionLibraryLoad(endpoints: .seeds(replicas + Array(primaries)), configuration: admin)
        #expect(load.exitStatus == 0, "\(load.failures)")
        #expect(Set(load.loaded) == Set(primaries.map { "loaded \(ChromeFunctions.libraryName) on \($0)" }), "\(load.loaded)")
    }

    @Test func loadingWithoutARedisStoreIsAUsageError() throws {
        let run = try CommandLineTests.run(["redis-functions", "load"])
        #expect(run.status == 2)
        #expect(run.errors.contains("needs --store redis://"), "\(run.errors)")
        let wrong = try CommandLineTests.run(["redis-functions", "unload"])
        #expect(wrong.status == 2)
    }

    /// The name follows the text: any change to a function renames the
    /// library, so two builds never replace each other's.
    @Test func theNameIsADigestOfTheText() {
        #expect(ChromeFunctions.libraryName.hasPrefix("topchrome_"))
        #expect(ChromeFunctions.libraryName.count == "topchrome_".count + 16)
        #expect(ChromeFunctions.library.hasPrefix("#!lua name=\(ChromeFunctions.libraryName)\n"))
        #expect(ChromeFunctions.library.contains("local LIBRARY = '\(ChromeFunctions.libraryName)'\n"))
    }
}
