import Foundation
@testable import Redis
import RedisTestSupport
import Testing

/// `connectionsPerNode`: a node's lanes, chosen by the key's slot.
struct ConnectionLanesTests {
    /// Each key's commands take one connection, always the same, and keys of
    /// other slots the others: what keeps a session's changes in order while
    /// replies of different sessions are read on several threads.
    @Test func aKeysCommandsKeepOneConnectionAndOtherSlotsTakeTheOthers() async throws {
        let server = try RedisServer()
        var configuration = RedisConfiguration()
        configuration.connectionsPerNode = 3
        let client = RedisClient(seeds: [server.node], configuration: configuration)
        defer { client.close() }
        // One key per lane: the first names whose slot falls on it.
        let keys = (0..<3).map { lane in
            (0...).lazy.map { "key\($0)" }.first { HashSlot.of(Array($0.utf8)) % 3 == lane }!
        }
        var lanes: [String: Int] = [:]
        for key in keys {
            #expect(try await client.send(["SET", key, "1"]) == .simple("OK"))
            let setBy = try await lastCommands(client)
            #expect(try await client.send(["GET", key]) == .bulk([49]))
            let getBy = try await lastCommands(client)
            // The listing goes without a key, on the first lane, whose last command it is then.
            let id = try #require(setBy.first { $0.value == "set" }?.key ?? (keys[0] == key ? setBy.first { $0.value == "client|list" }?.key : nil))
            #expect(getBy[id] == (keys[0] == key ? "client|list" : "get"), "\(key)'s GET took the connection its SET took")
            lanes[key] = id
        }
        #expect(Set(lanes.values).count == 3, "three keys of three lanes, three connections: \(lanes)")
        let listing = try await lastCommands(client)
        #expect(listing.count == 3, "the client holds its three lanes and no more: \(listing)")
    }

    /// The connections' threads carry a name an operator can find in `top -H`.
    @Test func theIOThreadsAreNamed() async throws {
        let server = try RedisServer()
        let connection = RedisConnection(to: server.node)
        defer { connection.close() }
        #expect(try await connection.send(["PING"]) == .simple("PONG"))
        let names = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").compactMap {
            try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        #expect(names.contains("redis-io"))
    }

    /// `CLIENT LIST`: each connection's id and the last command it ran.
    private func lastCommands(_ client: RedisClient) async throws -> [Int: String] {
        guard case let .bulk(text) = try await client.send(["CLIENT", "LIST"]) else { throw RedisError.unavailable }
        var commands: [Int: String] = [:]
        for line in String(decoding: text, as: UTF8.self).split(separator: "\n") {
            let fields = Dictionary(line.split(separator: " ").compactMap { field -> (String, String)? in
                let parts = field.split(separator: "=", maxSplits: 1)
                return parts.count == 2 ? (String(parts[0]), String(parts[1])) : nil
            }, uniquingKeysWith: { first, _ in first })
            if let id = fields["id"].flatMap({ Int($0) }), let command = fields["cmd"] { commands[id] = command }
        }
        return commands
    }
}
