import Testing
@testable import TopChromeAPI

@Suite struct MetricsTextTests {
    /// A family is its HELP line, its TYPE line, then its samples, each ending in a line feed.
    @Test func familyShape() {
        var metrics = MetricsText()
        metrics.family("topchrome_x_total", .counter, help: "Things counted.")
        metrics.sample("topchrome_x_total", ["reason": "a", "node": "b"], 3)
        metrics.sample("topchrome_x_total", 4)
        #expect(metrics.text == """
            # HELP topchrome_x_total Things counted.
            # TYPE topchrome_x_total counter
            topchrome_x_total{reason="a",node="b"} 3
            topchrome_x_total 4

            """)
    }

    /// Label values escape backslash, quote and line feed; HELP escapes backslash and line feed.
    @Test func escaping() {
        var metrics = MetricsText()
        metrics.family("g", .gauge, help: "a \"q\" \\ b\nc")
        metrics.sample("g", ["node": "x\"y\\z\nw"], 1)
        #expect(metrics.text == "# HELP g a \"q\" \\\\ b\\nc\n# TYPE g gauge\ng{node=\"x\\\"y\\\\z\\nw\"} 1\n")
    }
}
