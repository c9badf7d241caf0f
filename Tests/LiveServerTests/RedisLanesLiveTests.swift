import Foundation
import Redis
import RedisTestSupport
import Testing
import TopChromeTesting

/// `--redis-connections N`: sessions spread over N connections to one Redis,
/// each session's changes still applied in order.
@Suite struct RedisLanesLiveTests {
    @Test func sessionsOnEveryLaneGetTheirOwnStateInOrder() throws {
        let redis = try RedisServer()
        let server = try LiveServer(store: .redis(.seeds([redis.node])), keyPrefix: "lanes:") { $0.redis.connections = 3 }
        #expect(server.waitUntilReady())
        let ids = try (0..<24).map { _ in try server.createSession() }
        // Each session's reports go one after another, the sessions at once:
        // hidden, shown, and hidden again last.
        DispatchQueue.concurrentPerform(iterations: ids.count) { index in
            guard let client = try? server.client() else { return }
            for (seq, offset) in [300, 0, 40 + index].enumerated() {
                let body = #"{"contentOffsetY": \#(offset), "seq": \#(seq + 1)}"#
                _ = try? client.json("POST", "/v1/sessions/\(ids[index])/scroll", body)
            }
        }
        for id in ids {
            let state = try server.client().request("GET", "/v1/sessions/\(id)").json
            #expect(state["isRevealed"] as? Bool == false, "\(id): its last report hid the island")
            #expect(state["version"] as? Int == 4, "\(id): created, hidden, shown, hidden")
        }
        // Three connections took the sessions' commands, as many as asked for.
        let list = try redisCLI(port: redis.node.port, "CLIENT", "LIST")
        let calling = list.split(separator: "\n").filter { $0.contains("cmd=fcall") }
        #expect(calling.count == 3, "\(list)")
    }
}
