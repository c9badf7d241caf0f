import Foundation
import Locking
import Redis
import RedisTestSupport
import Testing
import TopChromeServer
import TopChromeTesting

/// docs/redis.md's configuration that loses no acknowledged write
/// (`min-replicas-to-write 1` on both servers, `--redis-wait-replicas 1`),
/// drilled: a write every 100 ms through five `SENTINEL FAILOVER`s, and
/// no acknowledged one lost (the versions acknowledged only go up, and the
/// session ends at or past the last one). Prints each switch's window of
/// 503s. A minute or two: its own target, `make test-sentinel-drill`,
/// which `make test` runs.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["TOPCHROME_SENTINEL_DRILL"] == "1"))
struct SentinelDrillTests {
    /// What the writer saw: each attempt's inset, status, version (200s) and time.
    final class Answers: @unchecked Sendable {
        let lock = PthreadLock()
        var list: [(inset: Int, status: Int, version: Int?, at: Date)] = []
        var stop = false
    }

    @Test func fiveSwitchesLoseNoAcknowledgedWrite() throws {
        let redis = try RedisSentinelFixture(serverArguments: ["--min-replicas-to-write", "1"])
        let endpoints = RedisEndpoints.sentinels([redis.sentinelNode], masterName: RedisSentinelFixture.masterName)
        let store = SessionStorage.redis(endpoints)
        var client = RedisConfiguration()
        client.commandTimeout = .seconds(2)
        let load = FunctionLibraryLoad(endpoints: endpoints, configuration: client)
        #expect(load.failures.isEmpty, "\(load)")
        let server = try LiveServer(store: store, keyPrefix: "drill:") {
            $0.redis.waitReplicas = 1
            $0.redis.timeout = 1
        }
        #expect(server.waitUntilReady())
        let id = try server.createSession()

        let answers = Answers()
        let writer = Thread {
            var inset = 0
            while !answers.lock.withLock({ answers.stop }) {
                inset += 1
                let answer = try? server.client().json("PUT", "/v1/sessions/\(id)/inset", #"{"inset": \#(inset)}"#)
                let version = answer?.status == 200 ? (try? answer?.json["version"] as? Int) ?? nil : nil
                answers.lock.withLock { answers.list.append((inset, answer?.status ?? 0, version, Date())) }
                usleep(100_000)
            }
        }
        writer.start()
        func acknowledged(since date: Date) -> Int {
            answers.lock.withLock { answers.list.count { $0.status == 200 && $0.at > date } }
        }
        var switches: [Date] = []
        for _ in 1...5 {
            // Writes go through before each switch (the last switch's window is over).
            let settled = Date()
            #expect(eventually(within: 60) { acknowledged(since: settled) >= 5 }, "writes did not succeed again")
            try redis.failOver(within: 60)
            switches.append(Date())
        }
        let last = Date()
        #expect(eventually(within: 60) { acknowledged(since: last) >= 5 }, "writes did not succeed after the last switch")
        answers.lock.withLock { answers.stop = true }
        while !writer.isFinished { usleep(10_000) }

        let list = answers.lock.withLock { answers.list }
        let acked = list.filter { $0.status == 200 }
        // No acknowledged write lost: each acknowledged version is above the
        // one before (a lost write would let a later one take its version).
        let wentBack = zip(acked, acked.dropFirst()).filter { ($1.version ?? 0) <= ($0.version ?? 0) }
        #expect(wentBack.isEmpty, "acknowledged versions went back: \(wentBack.map { ($0.0.version ?? 0, $0.1.version ?? 0) })")
        let final = try server.client().request("GET", "/v1/sessions/\(id)").json
        #expect((final["version"] as? Int ?? 0) >= (acked.last?.version ?? .max))
        #expect(Set(list.map(\.status)).isSubset(of: [200, 503]), "\(Set(list.map(\.status)))")

        // The window of 503s around each switch: from the last 200 before the
        // sentinel named the new primary to the first 200 after.
        var windows: [Double] = []
        for start in switches {
            let before = acked.last { $0.at <= start }?.at ?? start
            if let after = acked.first(where: { $0.at > start })?.at { windows.append(after.timeIntervalSince(before)) }
        }
        #expect(windows.count == 5)
        let shown = windows.map { String(format: "%.1f", $0) }.joined(separator: ", ")
        print("Sentinel drill: \(acked.count) of \(list.count) writes acknowledged, \(wentBack.count) times a version went back; 503 windows (s): \(shown)")
    }
}
