import Foundation
import Redis
import RedisSessionStore
import RedisTestSupport
import Testing

/// Redis runs a function's commands one at a time and keeps the writes made
/// before one it refuses: with an ACL user lacking one of the library's
/// commands, a change must be refused whole or made whole. Every function
/// runs, on sessions in the states that make it write the most, as a user
/// lacking each command the library calls in turn.
struct RefusedCommandTests {
    static let prefix = "refused:"

    /// Each function of the library with arguments that make it write: the
    /// arguments after the key (`watched` takes two keys).
    static func calls(_ name: String, key: String, other: String) -> [(String, [String])] {
        let function = ChromeFunctions.libraryName + "_" + name
        let far = String(Int(Date().timeIntervalSince1970 * 1000) + 3_600_000)
        let tag = "0123456789ab"
        switch name {
        case "create": return [(function, ["1", key + "new", tag, far, "600000", "20", "b", "enterAlways", "none", "1"])]
        case "get": return [(function, ["1", key, tag, "600000"])]
        case "read": return [(function, ["1", key])]
        case "apply":
            return [["d"], ["b", "revealAtTop", "none", "0"], ["q", "900", "0", "v", "99"], ["i", "12"]].map { inputs in
                (function, ["1", key, tag, far, "600000", "10", "0"] + inputs)
            }
        case "delete": return [(function, ["1", key, tag, far, "0"])]
        case "watched": return [(function, ["2", key, other, "600000"])]
        case "permitted": return [(function, ["1", key])]
        default: return []
        }
    }

    /// The library's functions, as its text registers them.
    static let functions: [String] = ChromeFunctions.library.split(separator: "LIBRARY .. '_").dropFirst().compactMap { part in
        part.firstIndex(of: "'").map { String(part[..<$0]) }
    }

    @Test func everyFunctionIsRefusedWholeOrMadeWhole() async throws {
        #expect(Set(Self.functions) == ["create", "get", "read", "apply", "delete", "watched", "permitted"])
        #expect(RedisPermissions.libraryCommands.contains("HSET") && RedisPermissions.libraryCommands.contains("PEXPIRE"))
        let server = try RedisServer()
        try server.cli(["FUNCTION", "LOAD", "REPLACE", ChromeFunctions.library])
        let admin = RedisClient(seeds: [server.node], configuration: RedisConfiguration())
        defer { admin.close() }
        var refusals = 0
        for command in RedisPermissions.libraryCommands {
            let user = "lacks-" + command.lowercased()
            try server.cli(["ACL", "SETUSER", user, "on", ">pw", "~*", "&*", "+@all", "-" + command.lowercased()])
            var configuration = RedisConfiguration()
            configuration.username = user
            configuration.password = "pw"
            let client = RedisClient(seeds: [server.node], configuration: configuration)
            defer { client.close() }
            // The library's own check names the command, as /readyz tells it.
            let named = try await client.send(["FCALL", ChromeFunctions.libraryName + "_permitted", "1", Self.prefix + "{x}"])
            #expect(named == .array([.bulk(Array(command.utf8))]), "\(user): \(named)")
            for function in Self.functions {
                for named in [true, false] {
                    for index in Self.calls(function, key: "", other: "").indices {
                        let key = "\(Self.prefix){\(user)-\(function)-\(named)-\(index)}"
                        let other = key + "-other"
                        try await prepare(admin, key: key, named: named)
                        try await prepare(admin, key: other, named: named)
                        let (fcall, arguments) = Self.calls(function, key: key, other: other)[index]
                        let before = try await contents(admin, [key, other, key + "new"])
                        let reply = try await client.send(["FCALL", fcall] + arguments)
                        guard case let .error(message) = reply else { continue }
                        refusals += 1
                        #expect(try await contents(admin, [key, other, key + "new"]) == before,
                                "\(function) as \(user) was refused (\(message)) after writing")
                    }
                }
            }
        }
        #expect(refusals > 0, "some call met a command its user lacks")
    }

    /// A session with every field set (a behaviour, its offsets, a seq), its
    /// expiry at 500 s; without its entity tag when not `named`, so that
    /// even a read names it.
    private func prepare(_ admin: RedisClient, key: String, named: Bool) async throws {
        let library = ChromeFunctions.libraryName
        let far = String(Int(Date().timeIntervalSince1970 * 1000) + 3_600_000)
        _ = try await admin.send(["DEL", key + "new"])
        _ = try await admin.send(["DEL", key])
        _ = try await admin.send(["FCALL", library + "_create", "1", key, "00000000000a", far, "600000", "40", "b", "enterAlways", "30", "1"])
        _ = try await admin.send(["FCALL", library + "_apply", "1", key, "00000000000b", far, "600000", "10", "0", "q", "17", "0", "v", "3"])
        if !named { _ = try await admin.send(["HDEL", key, "e"]) }
        _ = try await admin.send(["PEXPIRE", key, "500000"])
    }

    /// Each key's fields, and whether its expiry slid past 500 s.
    private func contents(_ admin: RedisClient, _ keys: [String]) async throws -> [String] {
        var all: [String] = []
        for key in keys {
            guard case let .array(fields) = try await admin.send(["HGETALL", key]),
                  case let .integer(ttl) = try await admin.send(["PTTL", key]) else { throw RedisError.unavailable }
            let texts = fields.map { $0.string ?? "?" }
            let pairs = stride(from: 0, to: texts.count - 1, by: 2).map { texts[$0] + "=" + texts[$0 + 1] }.sorted()
            all.append(key + ": " + pairs.joined(separator: " ") + " expiry " + (ttl > 500_000 ? "slid" : ttl > 0 ? "kept" : String(ttl)))
        }
        return all
    }
}
