import Testing
@testable import MicroHTTPD

@Suite struct RequestContextTests {
    @Test func resetClearsTheRequestAndKeepsSmallBuffers() {
        var context = RequestContext()
        context.begin(method: "POST", path: "/v1/sessions")
        context.headers.add(name: "If-Match", value: "\"1\"")
        let bytes: [UInt8] = Array("{}".utf8)
        bytes.withUnsafeBytes { context.receive($0, limit: 100) }
        context.endpoint = 3
        context.countsInFlight = true
        context.reset()
        #expect(context.method.isEmpty && context.path.isEmpty)
        #expect(Array(context.headers).isEmpty && context.body.isEmpty)
        #expect(context.endpoint == nil && !context.countsInFlight && !context.isInUse && !context.isBodyTooLarge)
        #expect(context.body.capacity >= 2, "a small body's buffer is kept for the next request")
        #expect(context.headers.byteCapacity > 0)
    }

    @Test func resetLetsLargeBuffersGo() {
        var context = RequestContext()
        context.begin(method: "POST", path: "/")
        let large = [UInt8](repeating: 32, count: RequestContext.keptCapacity + 1)
        large.withUnsafeBytes { context.receive($0, limit: 1 << 20) }
        context.reset()
        #expect(context.body.capacity == 0, "one large upload does not hold memory for the connection's life")
    }

    @Test func bodiesOverTheLimitAreDroppedAndFlagged() {
        var context = RequestContext()
        let bytes = [UInt8](repeating: 32, count: 60)
        bytes.withUnsafeBytes { context.receive($0, limit: 100) }
        bytes.withUnsafeBytes { context.receive($0, limit: 100) }
        #expect(context.isBodyTooLarge && context.body.isEmpty)
        context.reset()
        #expect(!context.isBodyTooLarge)
    }
}
