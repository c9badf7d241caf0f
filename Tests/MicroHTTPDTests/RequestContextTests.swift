import CMicroHTTPD
import Testing
@testable import MicroHTTPD

@Suite struct RequestContextTests {
    @Test func resetClearsTheRequestAndKeepsSmallBuffers() {
        var context = RequestContext()
        context.begin(method: "POST", target: "/v1/sessions", version: "HTTP/1.1")
        context.headers.add(name: "If-Match", value: "\"1\"")
        let bytes: [UInt8] = Array("{}".utf8)
        bytes.withUnsafeBytes { context.receive($0, limit: 100) }
        context.endpoint = 3
        context.countsInFlight = true
        context.isAnswered = true
        context.pending = PendingResponse()
        context.reset()
        #expect(context.method.isEmpty && context.path.isEmpty && context.version.isEmpty)
        #expect(Array(context.headers).isEmpty && context.body.isEmpty)
        #expect(context.endpoint == nil && !context.countsInFlight && !context.isInUse && !context.isBodyTooLarge)
        #expect(context.pending == nil && !context.isAnswered, "a long-poll's answer never reaches the next request")
        #expect(context.body.capacity >= 2, "a small body's buffer is kept for the next request")
        #expect(context.headers.byteCapacity > 0)
    }

    /// The responder gets the request's buffers, not copies, and the
    /// context has them back afterwards, for the observer and the next request.
    @Test func aLentRequestComesBackWhole() {
        var context = RequestContext()
        context.begin(method: "POST", target: "/v1/sessions", version: "HTTP/1.1")
        context.headers.add(name: "Content-Type", value: "application/json")
        Array("{}".utf8).withUnsafeBytes { context.receive($0, limit: 100) }
        var request = context.lendRequest()
        #expect(request.method == "POST" && request.path == "/v1/sessions" && request.version == "HTTP/1.1")
        #expect(request.headers["Content-Type"] == "application/json" && request.body == Array("{}".utf8))
        context.takeBack(&request)
        #expect(context.path == Array("/v1/sessions".utf8) && context.body == Array("{}".utf8))
        #expect(context.headers["Content-Type"] == "application/json")
    }

    @Test func resetLetsLargeBuffersGo() {
        var context = RequestContext()
        context.begin(method: "POST", target: "/", version: "HTTP/1.1")
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

    /// libmicrohttpd 0.9.75 completes a request before it reports its
    /// connection closed. Were that ever the other way round, the context
    /// must outlive the connection until the request completes, then go
    /// (the suite runs under ASan too).
    @Test func aConnectionClosedMidRequestLeavesItsContextToTheRequest() throws {
        var socketSlot: UnsafeMutableRawPointer?
        connectionNotified(nil, nil, &socketSlot, .CONNECTION_NOTIFY_STARTED)
        let context = try #require(socketSlot).assumingMemoryBound(to: RequestContext.self)
        context.pointee.begin(method: "GET", target: "/", version: "HTTP/1.1")
        var requestSlot: UnsafeMutableRawPointer? = UnsafeMutableRawPointer(context)

        connectionNotified(nil, nil, &socketSlot, .CONNECTION_NOTIFY_CLOSED)
        #expect(socketSlot == nil)
        #expect(context.pointee.isOrphaned && context.pointee.isInUse, "still in use, so not freed")

        let dispatcher = RequestDispatcher(responder: NoResponder(), observer: nil, maxBodyBytes: 16)
        withExtendedLifetime(dispatcher) {
            requestCompleted(Unmanaged.passUnretained(dispatcher).toOpaque(), nil, &requestSlot, .REQUEST_TERMINATED_COMPLETED_OK)
        }
        #expect(requestSlot == nil)
    }

    @Test func aConnectionClosedBetweenRequestsFreesItsContext() throws {
        var socketSlot: UnsafeMutableRawPointer?
        connectionNotified(nil, nil, &socketSlot, .CONNECTION_NOTIFY_STARTED)
        #expect(socketSlot != nil)
        connectionNotified(nil, nil, &socketSlot, .CONNECTION_NOTIFY_CLOSED)
        #expect(socketSlot == nil)
    }
}

private struct NoResponder: HTTPResponder {
    func respond(to request: HTTPRequest) -> HTTPResponse { HTTPResponse(status: 404) }
}
