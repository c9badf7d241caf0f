import Foundation
import Testing
import TopChromeAPI
import MemorySessionStore
import TopChromeCore
import TopChromeTesting
#if canImport(Glibc)
import Glibc
#endif

/// What TopChromeTesting gives the tests does what they take for granted.
@Suite struct TopChromeTestingTests {
    /// The reference sequence of SplitMix64 from seed 0, so a seed printed
    /// by a failing test replays the same run.
    @Test func splitMixIsSplitMix64() {
        var generator = SplitMix(seed: 0)
        #expect(generator.next() == 0xE220_A839_7B1D_CDAF)
        #expect(generator.next() == 0x6E78_9E6A_A1B9_65F4)
        #expect(generator.seed == 0)
    }

    /// Every answer comes later, on another thread, and is what the wrapped store answers.
    @Test func answersLaterStoreAnswersLaterOnAnotherThread() throws {
        let memory = InMemorySessionStore()
        // Long enough that the handler waits when the answer comes: one that
        // came first (a loaded machine, past the default 2 ms) is handed
        // over on the thread that asks for it.
        let store = AnswersLaterStore(wrapping: memory, delay: .milliseconds(500))
        guard case let .later(pending) = store.requestCreate(inset: 12) else {
            Issue.record("answered at once")
            return
        }
        let answered = DispatchSemaphore(value: 0)
        let outcome = Outcome()
        let caller = pthread_self()
        pending.whenAnswered { result in
            outcome.set(try? result.get(), elsewhere: pthread_equal(pthread_self(), caller) == 0)
            answered.signal()
        }
        #expect(answered.wait(timeout: .now() + 5) == .success)
        let (session, elsewhere) = outcome.value
        #expect(elsewhere)
        #expect(session.map { memory.session($0.id) } == session)
        #expect(session?.state.inset == 12)
    }

    /// The client waits for an answer that comes later, as a suspended connection would.
    @Test func inProcessClientFollowsAnswersThatComeLater() throws {
        let api = SessionAPI(store: AnswersLaterStore(wrapping: InMemorySessionStore()), maxBodyBytes: 64)
        #expect(api.respond(to: .init(method: "POST", path: "/v1/sessions")).pending != nil)
        let client = InProcessClient(api, maxBodyBytes: 64)
        let created = try client.json("POST", "/v1/sessions", #"{"inset": 3}"#)
        #expect(created.status == 201)
        #expect(created.etagVersion == 1)
        #expect(try created.json["inset"] as? Int == 3)
        #expect(try client.request("POST", "/v1/sessions", body: Array(repeating: 32, count: 65)).status == 413,
                "a body over the limit comes flagged, as the server hands it")
    }

    @Test func loopbackListenerServesEachConnection() throws {
        let listener = try LoopbackListener { connection in
            LoopbackListener.send(Array("hello".utf8), on: connection)
        }
        for _ in 0..<2 {
            let socket = try connectedSocket(port: listener.port)
            defer { close(socket) }
            var buffer = [UInt8](repeating: 0, count: 16)
            let count = recv(socket, &buffer, buffer.count, Int32(MSG_WAITALL))
            #expect(Array(buffer[..<max(count, 0)]) == Array("hello".utf8))
        }
        #expect(listener.accepted == 2)
    }

    @Test func nothingListensOnAFreePort() throws {
        #expect(throws: (any Error).self) { try connectedSocket(port: try LoopbackListener.freePort()) }
    }
}

/// What an answer's handler saw, set on the store's thread.
private final class Outcome: @unchecked Sendable {
    private let lock = NSLock()
    private var session: Session?
    private var elsewhere = false

    func set(_ session: Session?, elsewhere: Bool) {
        lock.withLock { (self.session, self.elsewhere) = (session, elsewhere) }
    }

    var value: (Session?, Bool) { lock.withLock { (session, elsewhere) } }
}
