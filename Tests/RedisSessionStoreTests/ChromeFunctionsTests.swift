import Foundation
import Redis
import RedisSessionStore
import RedisTestSupport
import Testing
import TopChromeCore

/// What the vectors do not cover: creating, reading, refusals, the size of
/// a session in Redis, and a Redis without the library.
struct ChromeFunctionsTests {
    let backend: RedisBackend
    let functions: ChromeFunctions

    init() throws {
        backend = try RedisBackend.single.get()
        functions = ChromeFunctions(client: backend.client, keyPrefix: "functions:", idleTimeout: .seconds(1000))
    }

    @Test func createsOnceAndReadsBackSlidingTheExpiry() async throws {
        let id = SessionID.random()
        let key = String(decoding: functions.key(for: id), as: UTF8.self)
        let created = try await functions.create(id, inset: 44.5)
        #expect(created?.id == id && created?.state == ChromeState(inset: 44.5))
        #expect(try await pttl(key).map { (600_000...1_000_000).contains($0) } == true, "the idle timeout, less what a loaded machine took")
        #expect(try await functions.create(id, inset: 10) == nil, "an id already taken is not created again")
        #expect(try await functions.session(id) == created)
        _ = try await backend.client.send(["PEXPIRE", key, "500000"])
        #expect(try await functions.session(id) == created)
        #expect(try await pttl(key).map { $0 > 500_000 } == true, "reading is a use")
        #expect(try await functions.session(SessionID.random()) == nil)

        let forever = ChromeFunctions(client: backend.client, keyPrefix: "functions:", idleTimeout: nil)
        let kept = SessionID.random()
        _ = try await forever.create(kept, inset: 0)
        #expect(try await pttl(String(decoding: forever.key(for: kept), as: UTF8.self)) == -1)
    }

    /// Inputs the API never passes (it refuses non-finite numbers and seqs
    /// past 2^53 - 1) are refused by the library too, before anything is
    /// written: the inputs before them in the batch do not land.
    @Test(arguments: [
        [ChromeInput.setInset(3), .setInset(.infinity)],
        [.setInset(3), .setInset(.nan)],
        [.setInset(3), .scroll(ScrollReport(contentOffsetY: -.infinity))],
        [.setInset(3), .scroll(ScrollReport(contentOffsetY: 0, seq: 1 << 53))],
    ])
    func refusedBatchesChangeNothing(_ inputs: [ChromeInput]) async throws {
        let id = SessionID.random()
        let key = String(decoding: functions.key(for: id), as: UTF8.self)
        let channel = functions.channel(for: id)
        let start = try #require(try await functions.create(id, inset: 20))
        _ = try await functions.apply([.scroll(ScrollReport(contentOffsetY: 500))], to: id, if: .always)
        _ = try await backend.client.send(["PEXPIRE", key, "500000"])
        let subscriber = try ShardedSubscriber(node: try backend.node(for: key), channel: channel)

        await #expect(throws: ChromeFunctionError.self) { try await functions.apply(inputs, to: id, if: .always) }

        _ = try await backend.client.send(["SPUBLISH", String(decoding: channel, as: UTF8.self), "end"])
        #expect(try subscriber.messages(until: Array("end".utf8)).isEmpty)
        #expect(try await pttl(key).map { $0 <= 500_000 } == true, "a refused batch is no use")
        let stored = try #require(try await functions.session(id))
        #expect(stored.state == ChromeState(inset: start.state.inset, isRevealed: false, version: 2, lastAppliedSeq: nil))
    }

    /// Two finite halves whose sum overflows: the library compares the
    /// infinity of the sum's sign, as ChromeRules does.
    @Test func anOverflowingSumIsFarPastAnEnd() async throws {
        let id = SessionID.random()
        _ = try #require(try await functions.create(id, inset: 20))
        let down = try await functions.apply([.scroll(ScrollReport(contentOffsetY: 1e308, contentInsetTop: 1e308))], to: id, if: .always)
        #expect(down.outcome.session?.state.isRevealed == false)
        let up = try await functions.apply([.scroll(ScrollReport(contentOffsetY: -1e308, contentInsetTop: -1e308))], to: id, if: .always)
        #expect(up.outcome.session?.state.isRevealed == true)
    }

    @Test func refusalsNameWhatIsWrong() async throws {
        let id = SessionID.random()
        let key = String(decoding: functions.key(for: id), as: UTF8.self)
        _ = try await functions.create(id, inset: 0)
        let tag = "0123456789ab"
        for (arguments, complaint) in [
            ([tag, "none", "1000", "1", "0", "x"], "unknown input x"),
            ([tag, "none", "1000", "1", "0", "q", "0", "0", "v", "9007199254740992"], "seq must be an integer"),
            ([tag, "none", "1000", "1", "0", "r", "0", "0", "sideways"], "axis must be v or h"),
            ([tag, "none", "1000", "1", "3", "in", "5", "1"], "condition set runs past"),
            ([tag, "none", "1000", "inf", "0"], "threshold must be a finite number"),
            ([tag, "none", "0", "1", "0"], "ttl must be at least 1 ms"),
            (["0123456789AB", "none", "1000", "1", "0"], "tag must be 12 lower-case hex digits"),
            (["0123456789a", "none", "1000", "1", "0"], "tag must be 12 lower-case hex digits"),
            ([tag, "soon", "1000", "1", "0"], "deadline must be an integer"),
        ] {
            let reply = try await backend.client.send(["FCALL", ChromeFunctions.libraryName + "_apply", "1", key] + arguments)
            guard case let .error(message) = reply else {
                Issue.record("\(arguments) answered \(reply)")
                continue
            }
            #expect(message.hasPrefix("ERR topchrome: \(complaint)"), "\(message)")
        }
        #expect(try await functions.session(id)?.state == ChromeState(inset: 0))
    }

    /// With the shipped `hash-max-listpack-*` settings a session stays a
    /// listpack: one small allocation, field names of one letter, numbers as
    /// integers where they are.
    @Test func aSessionIsOneSmallListpack() async throws {
        let id = SessionID.random()
        let key = String(decoding: ChromeFunctions(client: backend.client).key(for: id), as: UTF8.self)
        let shipped = ChromeFunctions(client: backend.client)
        _ = try await shipped.create(id, inset: 44.5)
        _ = try await shipped.apply([.scroll(ScrollReport(contentOffsetY: 300, seq: 123_456))], to: id, if: .always)
        #expect(try await backend.client.send(["OBJECT", "ENCODING", key]) == .bulk(Array("listpack".utf8)))
        guard case let .integer(bytes) = try await backend.client.send(["MEMORY", "USAGE", key]) else {
            Issue.record("MEMORY USAGE is an integer")
            return
        }
        print("MEMORY USAGE of one session (\(key)): \(bytes) bytes")
        #expect(bytes <= 160, "144 before the entity tag (`e`, `<version>.<tag>`) took one size class more")
    }

    /// A Redis that lost the library (restarted without it, `FUNCTION
    /// FLUSH`): a call loads it there again and is answered.
    @Test func aCallLoadsTheLibraryWhereItIsMissing() async throws {
        let server = try RedisServer()
        let client = RedisClient(seeds: [server.node])
        defer { client.close() }
        let functions = ChromeFunctions(client: client)
        #expect(try await functions.session(SessionID.random()) == nil)
        guard case let .array(libraries) = try await client.send(["FUNCTION", "LIST"]) else {
            Issue.record("FUNCTION LIST is an array")
            return
        }
        #expect(libraries.count == 1, "the library is loaded")
    }

    /// During a rolling upgrade, replicas of the last build and of this one
    /// share a Redis, and each loads its library on every connection. This
    /// build's load must leave the other library and its functions as they
    /// are, and the other's load must leave this one's: under one name, each
    /// load replaced the other, and the last build's replicas got replies of
    /// a shape they refuse.
    @Test func theLastBuildsLibraryAndThisOneLiveSideBySide() async throws {
        let server = try RedisServer()
        let client = RedisClient(seeds: [server.node])
        defer { client.close() }
        // The last build's library as it stands in for it: its name and
        // function names without a version, its reply of the old shape.
        let lastBuild = """
            #!lua name=topchrome
            redis.register_function('topchrome_get', function(keys, args) return 'the last build' end)
            """
        _ = try await client.send(["FUNCTION", "LOAD", "REPLACE", lastBuild])
        let functions = ChromeFunctions(client: client)
        let load = ChromeFunctions.loadCommand.map { String(decoding: $0, as: UTF8.self) }
        #expect(try await client.send(load) == .bulk(Array(ChromeFunctions.libraryName.utf8)))
        #expect(try await functions.session(SessionID.random()) == nil)
        #expect(try await client.send(["FCALL", "topchrome_get", "1", "k"]) == .bulk(Array("the last build".utf8)))

        _ = try await client.send(["FUNCTION", "LOAD", "REPLACE", lastBuild])
        #expect(try await functions.session(SessionID.random()) == nil, "the last build's load left this one's in place")
    }

    /// A session an older library wrote has no tag, or one left from an
    /// earlier version: the first call that may write names it, and it
    /// keeps that name; a read that may not write does not make one up.
    @Test func aStateWithoutATagIsNamedOnceAndKeepsItsName() async throws {
        let id = SessionID.random()
        let key = String(decoding: functions.key(for: id), as: UTF8.self)
        _ = try await backend.client.send(["HSET", key, "i", "5", "r", "1", "v", "3", "e", "2.0123456789ab"])
        let reply = try await backend.client.send(["FCALL_RO", ChromeFunctions.libraryName + "_read", "1", key])
        #expect(reply == .array([.bulk(Array("done".utf8)), .bulk(Array("5".utf8)), .bulk(Array("1".utf8)), .bulk(Array("3".utf8)), .null, .null]))
        let named = try #require(try await functions.session(id))
        #expect(named.state.version == 3 && named.tag != StateTag(bits: 0x0123_4567_89ab))
        #expect(try await functions.session(id) == named)
        #expect(try await backend.client.send(["HGET", key, "e"]) == .bulk(Array(named.entityTag.description.utf8)))
    }

    /// The name that calls use is the name the library registers.
    @Test func theLibraryIsNamedAsItsCallsSay() {
        let name = ChromeFunctions.libraryName
        #expect(ChromeFunctions.library.hasPrefix("#!lua name=\(name)\n"))
        #expect(ChromeFunctions.library.contains("local LIBRARY = '\(name)'\n"))
    }

    private func pttl(_ key: String) async throws -> Int64? {
        guard case let .integer(milliseconds) = try await backend.client.send(["PTTL", key]) else { return nil }
        return milliseconds
    }
}
