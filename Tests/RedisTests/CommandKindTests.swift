@testable import Redis
import Testing

/// Round trips are timed by command kind, read from the encoded command.
struct CommandKindTests {
    @Test func theKindIsTheCommandsNameInAnyCaseOrOther() {
        func kind(_ arguments: [String]) -> RedisCommandKind { RedisCommandKind(encoded: RESPRequest(arguments).bytes) }
        #expect(kind(["FCALL", "f", "1", "k"]) == .fcall)
        #expect(kind(["fcall_ro", "f", "1", "k"]) == .fcallReadOnly)
        #expect(kind(["WAIT", "1", "100"]) == .wait)
        #expect(kind(["TIME"]) == .time)
        #expect(kind(["Cluster", "SLOTS"]) == .cluster)
        #expect(kind(["FCALLX"]) == .other && kind(["FCAL"]) == .other && kind(["GET", "k"]) == .other)
        #expect(kind(["CLUSTERS"]) == .other, "a longer name is not a prefix match")
        #expect(RedisCommandKind(encoded: []) == .other)
        #expect(RedisCommandKind(encoded: Array("*1\r\n$9".utf8)[...]) == .other, "cut short")
        #expect(RedisCommandKind(encoded: Array("*1\r\n$5\r\nFCA".utf8)[...]) == .other, "cut short")
        #expect(Set(RedisCommandKind.allCases.map(\.label)).count == RedisCommandKind.allCases.count)
    }
}
