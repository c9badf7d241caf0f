import Foundation
import RedisSessionStore
import RedisTestSupport
import Testing

/// docs/redis.md's ACL is the one the service needs, derived from the
/// library and the client, so that the two cannot drift apart: a command
/// the library takes up, or one it drops, fails this test until the page
/// says so too.
struct DocumentedACLTests {
    static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources/RedisSessionStore")

    /// The commands the Lua calls, read from its files as they are on disk
    /// (`redis.call('X'` and `redis.pcall('X'`).
    static func commandsCalledByTheLua() throws -> Set<String> {
        var names = Set<String>()
        for file in ["topchrome.lua", "topchrome-rules.lua"] {
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            let pattern = try NSRegularExpression(pattern: #"redis\.p?call\(\s*'([A-Za-z_|]+)'"#)
            for match in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                names.insert(String(text[Range(match.range(at: 1), in: text)!]).lowercased())
            }
        }
        return names
    }

    @Test func theDocumentedACLIsTheOneTheLibraryAndTheClientNeed() throws {
        let line = try TestPKI.documentedACL(password: "x")
        let granted = Set(line.filter { $0.hasPrefix("+") })
        let needed = Set(RedisPermissions.leastACL(keyPrefix: "topchrome:"))
        #expect(granted == needed, "docs/redis.md grants \(granted.subtracting(needed).sorted()) more and \(needed.subtracting(granted).sorted()) less")
        let lua = try Self.commandsCalledByTheLua()
        #expect(lua.contains("hset") && lua.contains("time"))
        #expect(lua == Set(RedisPermissions.libraryCommands.map { $0.lowercased() }), "the service's own reading of the library")
        for command in lua { #expect(granted.contains("+" + command), "the library calls \(command), which docs/redis.md does not grant") }
        #expect(line.contains("~topchrome:*") && line.contains("&topchrome:*"))
    }
}
