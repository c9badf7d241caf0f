import Locking
import Synchronization
import WebSocketFrames

/// What `/metrics` tells of WebSockets: how many are open, messages each
/// way, and how they ended, by close code (1006: the client left without one).
public final class WebSocketCounts: @unchecked Sendable {
    private let open = Atomic<Int>(0)
    private let messagesIn = Atomic<Int>(0)
    private let messagesOut = Atomic<Int>(0)
    private let lock = PthreadLock()
    private var closes: [UInt16: Int] = [:]

    public init() {}

    func countOpened() { open.add(1, ordering: .relaxed) }
    func countReceived() { messagesIn.add(1, ordering: .relaxed) }
    func countSent() { messagesOut.add(1, ordering: .relaxed) }

    func countClosed(_ code: WebSocketCloseCode) {
        open.subtract(1, ordering: .relaxed)
        lock.withLock { closes[code.rawValue, default: 0] += 1 }
    }

    public var openNow: Int { open.load(ordering: .relaxed) }
    public var received: Int { messagesIn.load(ordering: .relaxed) }
    public var sent: Int { messagesOut.load(ordering: .relaxed) }
    /// Closes so far by code, in the codes' order.
    public var closesByCode: [(code: UInt16, count: Int)] {
        lock.withLock { closes.sorted { $0.key < $1.key }.map { ($0.key, $0.value) } }
    }
}
