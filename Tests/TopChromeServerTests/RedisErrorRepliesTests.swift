import Redis
import Testing
@testable import TopChromeServer

/// Redis's error replies are told in the log per kind, not per reply: when
/// a kind starts, at most once a minute while it lasts, and when it stops;
/// their codes are a fixed set, so `/metrics` cannot grow a label per word.
@Suite struct RedisErrorRepliesTests {
    static let node = RedisNode(host: "10.0.0.1", port: 6379)

    @Test func eachKindIsToldWhenItStartsWhileItLastsAndWhenItStops() {
        let log = CapturedLog(.text)
        let replies = RedisErrorReplies(logger: log.logger)
        let start = ContinuousClock.now
        for second in 0..<130 {
            replies.record(Self.node, "NOPERM this user has no permissions to run the 'fcall' command", now: start + .seconds(second))
        }
        replies.record(Self.node, "OOM command not allowed when used memory > 'maxmemory'.", now: start + .seconds(135))
        for _ in 0..<3 { replies.record(Self.node, "MOVED 3999 10.0.0.2:6379", now: start) }
        replies.sweep(now: start + .seconds(140))
        log.logger.flush()
        let lines = log.errorLines + log.outputLines  // errors and warnings may go apart; the stop is info
        let noperm = lines.filter { $0.contains("code=NOPERM") }
        #expect(noperm.count == 4, "started, twice a minute later, stopped: \(noperm)")
        #expect(noperm.first?.contains("Redis answers with errors") == true)
        #expect(noperm.dropFirst().prefix(2).allSatisfy { $0.contains("Redis still answers with errors") && $0.contains("replies=60") })
        #expect(noperm.last?.contains("Redis no longer answers with errors") == true && noperm.last?.contains("replies=130") == true)
        #expect(lines.filter { $0.contains("code=OOM") }.count == 1, "OOM met 5 s before: not stopped yet")
        #expect(!lines.contains { $0.contains("MOVED") }, "redirections are a cluster's routine")
        let totals = Dictionary(uniqueKeysWithValues: zip(RedisErrorReplies.codes, replies.totals))
        #expect(totals["NOPERM"] == 130 && totals["OOM"] == 1 && totals["MOVED"] == 3)
    }

    @Test func codesOutsideTheSetCountAsOther() {
        #expect(RedisErrorReplies.codes[RedisErrorReplies.index(of: "SOMENEWCODE whatever")] == "other")
        #expect(RedisErrorReplies.codes[RedisErrorReplies.index(of: "")] == "other")
        #expect(RedisErrorReplies.codes[RedisErrorReplies.index(of: "NOREPLICAS Not enough good replicas to write.")] == "NOREPLICAS")
    }
}
