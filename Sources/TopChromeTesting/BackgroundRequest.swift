import Foundation

/// A blocking request on a thread of its own (not the test's task pool nor
/// Dispatch's, which blocking waits could starve), read back with `value`:
/// a long-poll that waits while the test changes the session.
public final class BackgroundRequest: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private var result: Result<ReceivedResponse, any Error>?

    public init(_ body: @escaping @Sendable () throws -> ReceivedResponse) {
        Thread {
            self.result = Result { try body() }
            self.done.signal()
        }.start()
    }

    /// The response, once the request is answered.
    public var value: ReceivedResponse {
        get throws {
            done.wait()
            done.signal()
            return try result!.get()
        }
    }
}
