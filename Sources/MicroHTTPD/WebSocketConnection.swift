#if canImport(Glibc)
import Glibc
#endif
import CMicroHTTPD
import Locking
import WebSocketFrames

/// What a WebSocket's owner hears: its messages and its end. Both are
/// called on the loop's thread, one at a time per connection.
public protocol WebSocketDelegate: AnyObject, Sendable {
    func received(_ message: String, on connection: WebSocketConnection)
    /// The socket is closed; nothing more is sent or heard.
    func ended(_ connection: WebSocketConnection, code: WebSocketCloseCode)
}

/// What one WebSocket may cost the server.
public struct WebSocketLimits: Sendable {
    /// A message longer than this closes the connection (1009).
    public var maxMessageBytes: Int
    /// Messages a second, with as many at once; more close the connection (1008).
    public var messagesPerSecond: Int
    /// Bytes waiting for a client that does not read, beyond the newest
    /// state (which replaces the one before it): past this the connection ends.
    public var maxBufferedBytes: Int
    /// How long a closing connection waits for the client's close frame.
    public var closeTimeout: Duration = .seconds(2)

    public init(maxMessageBytes: Int, messagesPerSecond: Int, maxBufferedBytes: Int) {
        self.maxMessageBytes = maxMessageBytes
        self.messagesPerSecond = messagesPerSecond
        self.maxBufferedBytes = maxBufferedBytes
    }
}

/// One upgraded connection speaking RFC 6455 as a server: frames in
/// through its reader, out through a buffer that holds what the kernel
/// did not take. Any thread may send; only the loop's thread reads and
/// closes the socket, so a descriptor is never used after its close.
public final class WebSocketConnection: @unchecked Sendable {
    let token: UInt64
    let socket: UpgradedSocket
    /// Held strongly: a change delivered late, after the server stopped
    /// (by a Redis feed's thread), still sends through a connection whose
    /// loop must then exist. The loop's table lets go of it when it finishes.
    private let loop: WebSocketLoop
    private let limits: WebSocketLimits
    private let lock = PthreadLock()
    /// The loop thread's alone.
    private var reader: WebSocketFrameReader
    /// The loop thread's alone: the rate limit's allowance and when it was counted.
    private var allowance: Double
    private var allowanceCountedAt = ContinuousClock.now
    // Under `lock`:
    private var delegate: (any WebSocketDelegate)?
    private var output: [UInt8] = []
    private var outputStart = 0
    /// The newest frame that replaces its predecessor (a state), waiting for room.
    private var newest: [UInt8]?
    private var closing: (code: WebSocketCloseCode, deadline: ContinuousClock.Instant)?
    private var isFinished = false
    /// The client's close frame came: once ours is out, the socket can go.
    private var peerClosed = false
    private var writable = true
    private var lastHeard = ContinuousClock.now

    init(token: UInt64, socket: UpgradedSocket, loop: WebSocketLoop, limits: WebSocketLimits,
         delegate: any WebSocketDelegate) {
        self.token = token
        self.socket = socket
        self.loop = loop
        self.limits = limits
        self.delegate = delegate
        reader = WebSocketFrameReader(maxMessageBytes: limits.maxMessageBytes)
        allowance = Double(limits.messagesPerSecond)
    }

    /// A text message, always sent (an answer).
    public func send(_ text: [UInt8]) {
        let frame = WebSocketFrameWriter.frame(.text, text)
        let sent: Bool = lock.withLock {
            guard closing == nil, !isFinished else { return false }
            enqueue(frame)
            return true
        }
        if sent { loop.counts.countSent() }
    }

    /// A text message that makes the one sent this way before it stale (a
    /// state): a client that reads slowly gets the newest, not every one.
    public func sendNewest(_ text: [UInt8]) {
        let frame = WebSocketFrameWriter.frame(.text, text)
        let sent: Bool = lock.withLock {
            guard closing == nil, !isFinished else { return false }
            if outputStart < output.count {
                newest = frame
                return false
            }
            enqueue(frame)
            return true
        }
        if sent { loop.counts.countSent() }
    }

    /// Starts the closing handshake; the loop closes the socket when the
    /// client answers, leaves, or does not within ``WebSocketLimits/closeTimeout``.
    public func close(_ code: WebSocketCloseCode, reason: String = "") {
        lock.withLock { beginClose(code, reason: reason) }
    }

    /// Pings the client, and closes the connection (1008) if nothing came
    /// from it for `silence`: a peer that never answers holds a descriptor.
    public func ping(closingIfSilentFor silence: Duration) {
        lock.withLock {
            guard closing == nil, !isFinished else { return }
            if ContinuousClock.now - lastHeard > silence {
                beginClose(.policyViolation, reason: "no answer to pings")
            } else {
                enqueue(WebSocketFrameWriter.frame(.ping, []))
            }
        }
    }

    private func beginClose(_ code: WebSocketCloseCode, reason: String) {
        guard closing == nil, !isFinished else { return }
        newest = nil
        enqueue(WebSocketFrameWriter.close(code, reason: reason))
        closing = (code, ContinuousClock.now + limits.closeTimeout)
        loop.noteClosing()
    }

    /// Under `lock`. Writes what the kernel takes now and keeps the rest;
    /// a client that lets too much pile up is cut off.
    private func enqueue(_ frame: [UInt8]) {
        if outputStart == output.count {
            output.removeAll(keepingCapacity: output.capacity <= 65_536)
            outputStart = 0
        }
        output += frame
        flush()
        if output.count - outputStart > limits.maxBufferedBytes, closing == nil {
            // Nothing more can reach it in order: no close frame either.
            output = []
            outputStart = 0
            closing = (.policyViolation, ContinuousClock.now)
            loop.noteClosing()
        }
    }

    /// Under `lock`: writes until the kernel's buffer is full, then asks
    /// the loop to say when there is room again.
    private func flush() {
        guard !isFinished else { return }
        while outputStart < output.count {
            let written = output.withUnsafeBytes {
                Glibc.send(socket.descriptor, $0.baseAddress! + outputStart, $0.count - outputStart, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            }
            if written > 0 {
                outputStart += written
                continue
            }
            if written < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                if writable {
                    writable = false
                    loop.watch(self, forWriting: true)
                }
            } else if written < 0 && errno == EINTR {
                continue
            } else {
                // The client is gone: the loop closes the socket.
                output = []
                outputStart = 0
                closing = (closing?.code ?? .goingAway, ContinuousClock.now)
                loop.noteClosing()
            }
            return
        }
        if let next = newest {
            newest = nil
            output += next
            loop.counts.countSent()
            flush()
        } else if !writable {
            writable = true
            loop.watch(self, forWriting: false)
        }
    }

    /// The loop's thread: the socket may be written again.
    func writableAgain() {
        lock.withLock {
            writable = true
            flush()
        }
    }

    /// The loop's thread: bytes came. Returns false once the connection is to be closed now.
    func readable() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(socket.descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count > 0 {
                lock.withLock { lastHeard = .now }
                guard handle(buffer[..<count]) else { return false }
                if count < buffer.count { return true }
            } else if count < 0 && errno == EINTR {
                continue
            } else if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                return true
            } else {
                return false  // the client closed, or the socket failed
            }
        }
    }

    /// The bytes libmicrohttpd read past the request's head, before the loop watches the socket.
    func begin(with bytes: [UInt8]) -> Bool {
        bytes.isEmpty || handle(bytes[...])
    }

    private func handle(_ bytes: ArraySlice<UInt8>) -> Bool {
        reader.feed(bytes)
        while true {
            let event: WebSocketEvent?
            do {
                event = try reader.next()
            } catch {
                close(error.closeCode)
                return true
            }
            guard let event else { return true }
            switch event {
            case let .text(text):
                loop.counts.countReceived()
                guard withinRate() else {
                    close(.policyViolation, reason: "more than \(limits.messagesPerSecond) messages a second")
                    return true
                }
                if let delegate = lock.withLock({ closing == nil ? delegate : nil }) {
                    delegate.received(text, on: self)
                }
            case .binary:
                loop.counts.countReceived()
                close(.policyViolation, reason: "messages are JSON text")
            case let .ping(payload):
                lock.withLock {
                    guard closing == nil, !isFinished else { return }
                    enqueue(WebSocketFrameWriter.frame(.pong, payload))
                }
            case .pong:
                break
            case let .close(code, _):
                return lock.withLock {
                    peerClosed = true
                    // The client began it: its code back, as RFC 6455 §5.5.1 has it.
                    beginClose(code.map(WebSocketCloseCode.init(rawValue:)) ?? .normal, reason: "")
                    // The socket goes once our close frame is out.
                    return outputStart < output.count
                }
            }
        }
    }

    /// A token bucket: `messagesPerSecond` a second, as many at once.
    private func withinRate() -> Bool {
        let now = ContinuousClock.now
        let rate = Double(limits.messagesPerSecond)
        let elapsed = now - allowanceCountedAt
        allowanceCountedAt = now
        allowance = min(rate, allowance + rate * (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18))
        guard allowance >= 1 else { return false }
        allowance -= 1
        return true
    }

    /// The loop's thread: whether a closing connection's time is up, or
    /// both close frames have passed and ours is out.
    func closingIsOver(now: ContinuousClock.Instant) -> Bool {
        lock.withLock {
            guard let closing else { return false }
            return now >= closing.deadline || (peerClosed && outputStart == output.count)
        }
    }

    var isClosing: Bool { lock.withLock { closing != nil } }

    /// The loop's thread (or the stop's, once the loop is gone): closes the socket, once.
    func finish() {
        let ended: ((any WebSocketDelegate)?, WebSocketCloseCode)? = lock.withLock {
            guard !isFinished else { return nil }
            isFinished = true
            // Under the lock, so no sender asks epoll about a closed descriptor.
            loop.forget(self)
            let code = closing?.code ?? WebSocketCloseCode(rawValue: 1006)  // gone without a close frame
            defer { delegate = nil }
            return (delegate, code)
        }
        guard let (delegate, code) = ended else { return }
        socket.close()
        loop.counts.countClosed(code)
        delegate?.ended(self, code: code)
    }
}
