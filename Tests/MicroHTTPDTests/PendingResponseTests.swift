import Testing
@testable import MicroHTTPD

/// Fields added to a pending answer reach it, whether the answer comes after or came before.
@Suite struct PendingResponseTests {
    /// Only read once the answer is there, so libmicrohttpd never sees it.
    let connection = OpaquePointer(bitPattern: 0x1000)!

    @Test func fieldsAddedBeforeTheAnswerAreInIt() throws {
        let pending = PendingResponse()
        pending.addToAnswer(HTTPHeaders([("Vary", "Origin")]))
        pending.addToAnswer(HTTPHeaders([("X-Second", "2")]))
        pending.complete(with: CompleteResponse(status: 503, headers: HTTPHeaders([("Retry-After", "1")])))
        let answer = try #require(pending.answerOrSuspend(connection))
        #expect(answer.headers.fields.map(\.name) == ["Retry-After", "Vary", "X-Second"])
    }

    @Test func fieldsAddedAfterTheAnswerAreInItToo() throws {
        let pending = PendingResponse()
        pending.complete(with: CompleteResponse(status: 200))
        pending.addToAnswer(HTTPHeaders([("Vary", "Origin")]))
        let answer = try #require(pending.answerOrSuspend(connection))
        #expect(answer.headers["Vary"] == "Origin")
    }

    /// What a caller without a connection reads: nothing while the request
    /// waits, then the answer with the fields added to it.
    @Test func theAnswerIsReadableOnceDecided() throws {
        let pending = PendingResponse()
        #expect(pending.answer == nil)
        pending.addToAnswer(HTTPHeaders([("Vary", "Origin")]))
        pending.complete(with: CompleteResponse(status: 304))
        guard case let .complete(answer)? = pending.answer else {
            Issue.record("no complete answer")
            return
        }
        #expect(answer.status == 304)
        #expect(answer.headers["Vary"] == "Origin")
    }
}
