import Foundation
import Redis
import RedisTestSupport
import Testing
import TopChromeTesting

/// A slot that holds watched sessions moves key by key (`MIGRATE`) while
/// they change: a change to a key already moved runs on the importing node
/// (`ASK`), and publishes there, while the channel stays on the migrating
/// node until the slot is handed over. Watchers on either replica must see
/// every version, in order, and no long-poll may answer 304 for a state
/// older than the session's. On a cluster of its own: a drill on the
/// shared one may kill the primary it moves from.
@Suite struct SlotMigrationLiveTests {
    @Test func watchersSeeEveryChangeWhileTheirSlotMigrates() throws {
        let cluster = try RedisClusterFixture.dedicated(replicasPerPrimary: 0)
        let prefix = "migrate\(UInt32.random(in: 0...UInt32.max)):"
        // What is held here is every change heard, not Redis's speed: under a
        // sanitizer on a busy machine a change mid-migration (MIGRATE, ASK)
        // took longer than the default second, a 503 (seen once).
        let changing = try LiveServer(store: .redis(.seeds(cluster.seeds)), keyPrefix: prefix) { $0.redis.timeout = 5 }
        let watching = try LiveServer(store: .redis(.seeds(cluster.seeds)), keyPrefix: prefix) { $0.redis.timeout = 5 }
        #expect(changing.waitUntilReady() && watching.waitUntilReady())
        let ids = [try changing.createSession(inset: 0)]
        let key = "\(prefix){\(ids[0])}"
        let slot = HashSlot.of(Array(key.utf8))
        let source = try cluster.primary(of: slot)
        let target = try #require(try cluster.primaries().first { $0 !== source })
        let (sourceID, targetID) = (try cluster.nodeID(of: source), try cluster.nodeID(of: target))
        // Other keys of the slot, moved before and after the session's.
        let fillers = (0..<3).map { "\(key):filler\($0)" }
        for filler in fillers { _ = try redisCLI(port: source.port, "SET", filler, "x") }

        let streams = [try EventStreamClient(port: watching.port, sessionID: ids[0]),
                       try EventStreamClient(port: changing.port, sessionID: ids[0])]
        for stream in streams { #expect(try stream.nextState()?.id.hasPrefix("1.") == true) }
        var etag = try changing.etag(ids[0])
        var version = 1
        // Its event stream; each long-poll below is one more while it waits.
        let streamWatchers = watching.service.watcherCount

        /// One change through `changing`, which a long-poll on `watching` must hear.
        func change() throws {
            // The last long-poll's answer reaches its client before the feed
            // drops its watcher (the watcher answers from its callback, then
            // says it is done): counted from before that drop, a new watcher
            // would only bring the count back to where it was.
            #expect(eventually { watching.service.watcherCount == streamWatchers }, "the last long-poll's watcher is dropped")
            let poll = BackgroundRequest { [watching, etag] in
                try watching.client().request("GET", "/v1/sessions/\(ids[0])", headers: [("If-None-Match", etag), ("Prefer", "wait=5")])
            }
            // Registering subscribes to the session in Redis, which mid-migration
            // may be redirected or retried, slow on a loaded machine: as long as
            // the poll's own client waits for an answer (10 s), not half that.
            #expect(eventually(within: 10) { watching.service.watcherCount > streamWatchers })
            version += 1
            let changed = try changing.client().json("PUT", "/v1/sessions/\(ids[0])/inset", #"{"inset": \#(version)}"#)
            #expect(changed.status == 200 && changed.etagVersion == UInt64(version), "\(changed.status) \(changed.text)")
            etag = try #require(changed.header("ETag"))
            let answer = try poll.value
            #expect(answer.status == 200 && answer.etagVersion == UInt64(version),
                    "the long-poll for version \(version) answered \(answer.status) \(answer.header("ETag") ?? "")")
        }
        func migrate(_ key: String) throws {
            let reply = try redisCLI(port: source.port, "MIGRATE", "127.0.0.1", String(target.port), "", "0", "5000", "KEYS", key)
            #expect(reply.hasPrefix("OK"), "MIGRATE \(key): \(reply)")
        }

        _ = try redisCLI(port: target.port, "CLUSTER", "SETSLOT", String(slot), "IMPORTING", sourceID)
        _ = try redisCLI(port: source.port, "CLUSTER", "SETSLOT", String(slot), "MIGRATING", targetID)
        try change()
        try migrate(fillers[0])
        try change()
        try migrate(key)
        try change()
        try change()
        try migrate(fillers[1])
        try change()
        try migrate(fillers[2])
        try change()
        try handOver(slot, to: target, cluster: cluster)
        // The handover moves the channel: each replica hears `sunsubscribe`
        // and listens on the target, and a change made before it does
        // reaches its watchers folded into the state it reads then
        // (docs/redis.md). What this test holds to is every change while the
        // slot migrates, so the next change waits for both to listen again.
        let channel = key + ":changes"
        #expect(eventually(within: 20) {
            (try? redisCLI(port: target.port, "PUBSUB", "SHARDNUMSUB", channel))?
                .split(whereSeparator: \.isNewline).last.map(String.init) == "2"
        }, "both replicas listen on the slot's new owner")
        try change()
        try change()

        for (index, stream) in streams.enumerated() {
            var seen = [1]  // the first state, read above
            while seen.last != version, let event = try stream.nextState() {
                let number = try #require(Int(event.id.prefix { $0 != "." }))
                if seen.last != number { seen.append(number) }
            }
            #expect(seen == Array(1...version), "stream \(index) saw \(seen)")
        }
    }

    /// Gives `slot` to `target` on every primary, again until all of them say so.
    private func handOver(_ slot: Int, to target: RedisServer, cluster: RedisClusterFixture) throws {
        let targetID = try cluster.nodeID(of: target)
        let deadline = Date().addingTimeInterval(20)
        while true {
            for node in [target] + (try cluster.primaries().filter { $0 !== target }) {
                _ = try redisCLI(port: node.port, "CLUSTER", "SETSLOT", String(slot), "NODE", targetID)
            }
            usleep(100_000)
            if try cluster.primaries().allSatisfy({ try cluster.owner(of: slot, asSeenBy: $0) == targetID }) { return }
            guard Date() < deadline else { throw RedisTestSetupError(description: "the primaries do not agree that \(target.port) serves slot \(slot)") }
        }
    }
}
