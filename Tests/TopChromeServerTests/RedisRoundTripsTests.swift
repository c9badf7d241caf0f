import Redis
import Testing
@testable import TopChromeServer

/// Round trips by node and command, with a bounded set of node labels.
@Suite struct RedisRoundTripsTests {
    @Test func eachNodeAndKindIsASeriesAndNodesPastTheLimitAreOther() {
        let roundTrips = RedisRoundTrips()
        let a = roundTrips.series(for: RedisNode(host: "10.0.0.1", port: 7001))
        #expect(roundTrips.series(for: RedisNode(host: "10.0.0.1", port: 7001)) == a, "one series per node")
        let ipv6 = roundTrips.series(for: RedisNode(host: "::1", port: 7002))
        roundTrips.record(series: a, .fcall, .microseconds(80))
        roundTrips.record(series: a, .fcall, .milliseconds(3))
        roundTrips.record(series: ipv6, .wait, .seconds(2))
        var last = 0
        for port in 0..<(RedisRoundTrips.nodeLimit + 5) { last = roundTrips.series(for: RedisNode(host: "10.1.0.1", port: 8000 + port)) }
        roundTrips.record(series: last, .time, .microseconds(200))
        let text = roundTrips.render()
        let lines = text.split(separator: "\n")
        #expect(lines.contains(#"topchrome_redis_round_trip_seconds_bucket{node="10.0.0.1:7001",command="fcall",le="0.0001"} 1"#))
        #expect(lines.contains(#"topchrome_redis_round_trip_seconds_bucket{node="10.0.0.1:7001",command="fcall",le="0.005"} 2"#))
        #expect(lines.contains(#"topchrome_redis_round_trip_seconds_count{node="10.0.0.1:7001",command="fcall"} 2"#))
        #expect(lines.contains(#"topchrome_redis_round_trip_seconds_sum{node="10.0.0.1:7001",command="fcall"} 0.00308"#))
        #expect(lines.contains(#"topchrome_redis_round_trip_seconds_bucket{node="[::1]:7002",command="wait",le="1.0"} 0"#))
        #expect(lines.contains(#"topchrome_redis_round_trip_seconds_bucket{node="[::1]:7002",command="wait",le="+Inf"} 1"#))
        #expect(lines.contains(#"topchrome_redis_round_trip_seconds_count{node="other",command="time"} 1"#))
        #expect(!text.contains(#"command="fcall_ro""#), "a series that counted nothing is not written")
        let nodes = lines.filter { $0.contains("node=\"") }.map { $0.split(separator: "\"")[1] }
        #expect(Set(nodes) == ["10.0.0.1:7001", "[::1]:7002", "other"])
    }
}
