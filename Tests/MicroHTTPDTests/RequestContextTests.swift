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

    /// libmicrohttpd reads the answer's body where it lies, not from a copy:
    /// the context holds it, unmoved, until the request completes, and then
    /// keeps its room for the connection's next answer.
    @Test func aSentBodyIsHeldInPlaceUntilTheRequestCompletes() throws {
        var context = RequestContext()
        context.begin(method: "GET", target: "/v1/sessions/x", version: "HTTP/1.1")
        var body = Array(repeating: UInt8(ascii: "a"), count: 300)
        let storage = body.withUnsafeBytes { $0.baseAddress }
        let lent = context.holdWhileSent(&body)
        let held = try #require(lent)
        #expect(held.baseAddress == storage && held.count == 300, "the body's own bytes, not a copy")
        #expect(body.isEmpty, "taken from the answer, which may now go")
        var second = Array("late".utf8)
        let refused = context.holdWhileSent(&second)
        #expect(refused == nil, "a held body is never let go of before the request completes")
        #expect(Array(held) == Array(repeating: UInt8(ascii: "a"), count: 300))
        context.reset()
        let room = context.responseBuffers.takeBody()
        #expect(room.isEmpty && room.capacity >= 300, "its room serves the next answer")
        var next = Array("{}".utf8)
        let again = context.holdWhileSent(&next)
        #expect(again != nil)
    }

    /// A request's duration is read off the kernel's monotonic clock: it
    /// must agree with `ContinuousClock` on what passed, in its units.
    @Test func aRequestsDurationIsWhatPassedSinceItsStart() {
        let before = ContinuousClock.now
        let start = RequestStart.now
        let started = ContinuousClock.now
        while ContinuousClock.now - started < .milliseconds(2) {}  // the clock itself is what is waited for
        let elapsed = start.elapsed
        let after = ContinuousClock.now
        #expect(elapsed >= .milliseconds(2))
        #expect(elapsed <= after - before)
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

        let dispatcher = RequestDispatcher(responder: NoResponder(), observer: nil, maxBodyBytes: 16, tlsIdentities: nil)
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

@Suite struct ResponseBuffersTests {
    /// A sent response's buffers come back empty, with their room, for the connection's next answer.
    @Test func keepsTheSentResponsesRoomEmptied() {
        var buffers = ResponseBuffers()
        var response = CompleteResponse(status: 200, headers: HTTPHeaders([("ETag", "\"12\"")]), body: Array(repeating: 65, count: 300))
        buffers.keep(&response, limit: RequestContext.keptCapacity)
        let headers = buffers.takeHeaders(), body = buffers.takeBody()
        #expect(body.isEmpty && body.capacity >= 300)
        #expect(Array(headers).isEmpty && headers.byteCapacity > 0)
        #expect(buffers.takeBody().capacity == 0, "taken, not shared: the next write into them allocates nothing")
    }

    @Test func keepsTheLargerRoomAndNothingOverTheLimit() {
        var buffers = ResponseBuffers()
        var large = CompleteResponse(status: 200, body: Array(repeating: 65, count: 600))
        buffers.keep(&large, limit: RequestContext.keptCapacity)
        var small = CompleteResponse(status: 200, body: Array(repeating: 65, count: 10))
        buffers.keep(&small, limit: RequestContext.keptCapacity)
        #expect(buffers.body.capacity >= 600, "a smaller answer does not take the place of the room there is")
        var huge = CompleteResponse(status: 200, body: Array(repeating: 65, count: RequestContext.keptCapacity + 1))
        buffers.keep(&huge, limit: RequestContext.keptCapacity)
        #expect(buffers.body.capacity < RequestContext.keptCapacity, "one large answer does not hold memory for the connection's life")
    }
}

private struct NoResponder: HTTPResponder {
    func respond(to request: MicroHTTPDRequest) -> MicroHTTPDResponse { MicroHTTPDResponse(status: 404) }
}
