import CMicroHTTPD
import Synchronization

/// One open connection as the server's own checks see it: its socket, its
/// client's address, and where its current request stands, which the
/// connection's thread writes and the sweep (``ConnectionSweep``) reads.
///
/// libmicrohttpd 0.9.75 bounds a connection only by idleness
/// (`MHD_OPTION_CONNECTION_TIMEOUT`, and `MHD_CONNECTION_OPTION_TIMEOUT`
/// per connection, is the time since the last byte): a client that sends a
/// header line every few seconds is never idle, and the access handler is
/// not called before the head is whole. So the server keeps its own
/// deadline: a request begins when the kernel's count of bytes received on
/// the socket moves while the connection waits for one, or at the latest
/// when its request line is read (`MHD_OPTION_URI_LOG_CALLBACK`), and its
/// head and body must be read within the request timeout. (The count is
/// noted a sweep after the last request ended: a partial request line sent
/// within that moment and nothing after it is left to the idle timeout.)
final class OpenConnection: @unchecked Sendable {
    let descriptor: Int32
    /// Counted against the per-address cap; nil when exempt (a trusted proxy).
    let countedBlock: SubscriberBlock?
    /// TLS: a 408 cannot be written past the library, only the socket shut.
    let isEncrypted: Bool
    /// See ``Phase``. A new connection has received nothing: any byte begins its first request.
    let phase = Atomic<Int>(Phase.waiting)
    /// The bytes received when the sweep last looked; the sweep's alone (under the registry's lock).
    var bytesMark: UInt64 = 0

    init(descriptor: Int32, countedBlock: SubscriberBlock?, isEncrypted: Bool) {
        self.descriptor = descriptor
        self.countedBlock = countedBlock
        self.isEncrypted = isEncrypted
    }

    /// Where a connection's request stands, one integer so both threads
    /// change it with one atomic operation: values from `receivingSince`
    /// up are that plus the sweep's time (milliseconds) when the request
    /// was first seen.
    enum Phase {
        /// The request is read whole and being answered (or waits, suspended): no deadline.
        static let answering = 0
        /// Waiting for a request, the byte count not yet noted by the sweep.
        static let waitingUnmarked = 1
        /// Waiting for a request, the byte count noted.
        static let waiting = 2
        /// The request line or the head has come, the sweep has not seen it yet.
        static let headReceived = 3
        /// Answered 408 by the sweep: the connection ends.
        static let timedOut = 4
        static let receivingSince = 16
    }

    /// The request line has come, or the head is whole (the access
    /// handler's first call): the deadline runs from now at the latest.
    /// False if the sweep already answered 408.
    func headArrived() -> Bool {
        var current = phase.load(ordering: .relaxed)
        while current == Phase.waiting || current == Phase.waitingUnmarked {
            let (exchanged, original) = phase.compareExchange(expected: current, desired: Phase.headReceived,
                                                              ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
        return current != Phase.timedOut
    }

    /// The request is read and is being answered: its deadline no longer
    /// holds. False if the sweep already answered 408, which then owns the
    /// connection's output.
    func answering() -> Bool {
        phase.exchange(Phase.answering, ordering: .acquiringAndReleasing) != Phase.timedOut
    }

    /// The request is over; the connection waits for the next.
    func requestCompleted() {
        let current = phase.load(ordering: .relaxed)
        guard current != Phase.timedOut else { return }
        _ = phase.compareExchange(expected: current, desired: Phase.waitingUnmarked, ordering: .relaxed)
    }
}
