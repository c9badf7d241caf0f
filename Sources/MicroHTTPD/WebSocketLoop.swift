#if canImport(Glibc)
import Glibc
#endif
import CMicroHTTPD
import Dispatch
import Locking
import WebSocketFrames

/// Every upgraded WebSocket, read by one thread over epoll: a socket costs
/// a registration and its buffers, not a thread, as libmicrohttpd's own
/// connections do. Writes happen on the sender's thread; the loop writes
/// only what the kernel could not take then. Its thread starts with the
/// first socket, so an API that never upgrades has none.
public final class WebSocketLoop: @unchecked Sendable {
    public let limits: WebSocketLimits
    public let counts = WebSocketCounts()
    private let lock = PthreadLock()
    private var connections: [UInt64: WebSocketConnection] = [:]
    private var nextToken: UInt64 = 1
    /// Made with the loop and closed with it, so no thread reads them changing.
    private let epoll: Int32
    private let wake: Int32
    private var thread: pthread_t?
    private var stopped = false
    /// Some connection is closing: the loop looks at deadlines.
    private var anyClosing = false
    /// A stop waits for the sockets' closing handshakes: the last socket
    /// to go signals `emptied`, which it waits on rather than polling.
    private var awaitingEmpty = false
    private let emptied = DispatchSemaphore(value: 0)

    /// A second of states at 120 Hz and then some; the kernel doubles it for its bookkeeping.
    static let sendBufferBytes: Int32 = 32_768

    public init(limits: WebSocketLimits) {
        self.limits = limits
        epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        wake = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        var event = epoll_event(events: EPOLLIN.rawValue, data: epoll_data_t(u64: 0))
        if epoll >= 0 && wake >= 0 { _ = epoll_ctl(epoll, EPOLL_CTL_ADD, wake, &event) }
    }

    deinit {
        if wake >= 0 { close(wake) }
        if epoll >= 0 { close(epoll) }
    }

    /// Sockets open now.
    public var count: Int { lock.withLock { connections.count } }

    /// Takes an upgraded socket; nil (and the socket closed) if the loop
    /// has stopped or cannot watch it.
    public func adopt(_ socket: UpgradedSocket, delegate: any WebSocketDelegate) -> WebSocketConnection? {
        let connection: WebSocketConnection? = lock.withLock {
            guard !stopped, startIfNeeded() else { return nil }
            let connection = WebSocketConnection(token: nextToken, socket: socket, loop: self, limits: limits, delegate: delegate)
            nextToken += 1
            connections[connection.token] = connection
            return connection
        }
        guard let connection else {
            socket.close()
            return nil
        }
        counts.countOpened()
        return connection
    }

    /// Reads what came with the request's head, then watches the socket.
    /// Apart from ``adopt(_:delegate:)`` so the owner can send first.
    public func start(_ connection: WebSocketConnection) {
        // A fixed send buffer: the kernel's autotuning would let a reader
        // that stalls hold megabytes (tcp_wmem's max) before states coalesce.
        var sendBuffer = Self.sendBufferBytes
        setsockopt(connection.socket.descriptor, SOL_SOCKET, SO_SNDBUF, &sendBuffer, socklen_t(MemoryLayout<Int32>.size))
        guard connection.begin(with: connection.socket.bytesAlreadyRead) else {
            connection.finish()
            return
        }
        var event = epoll_event(events: EPOLLIN.rawValue | EPOLLRDHUP.rawValue, data: epoll_data_t(u64: connection.token))
        if epoll_ctl(epoll, EPOLL_CTL_ADD, connection.socket.descriptor, &event) != 0 {
            connection.finish()
        }
    }

    /// Under the connection's lock: whether the loop waits for room to write too.
    func watch(_ connection: WebSocketConnection, forWriting: Bool) {
        let events = EPOLLIN.rawValue | EPOLLRDHUP.rawValue | (forWriting ? EPOLLOUT.rawValue : 0)
        var event = epoll_event(events: events, data: epoll_data_t(u64: connection.token))
        _ = epoll_ctl(epoll, EPOLL_CTL_MOD, connection.socket.descriptor, &event)
    }

    /// Under the connection's lock, before its socket closes.
    func forget(_ connection: WebSocketConnection) {
        _ = epoll_ctl(epoll, EPOLL_CTL_DEL, connection.socket.descriptor, nil)
        let wasLast = lock.withLock {
            _ = connections.removeValue(forKey: connection.token)
            return connections.isEmpty && awaitingEmpty
        }
        if wasLast { emptied.signal() }
    }

    func noteClosing() {
        lock.withLock { anyClosing = true }
    }

    /// Every socket begins its close with `code` (1001 at a stop).
    public func closeAll(_ code: WebSocketCloseCode, reason: String = "") {
        for connection in lock.withLock({ Array(connections.values) }) { connection.close(code, reason: reason) }
    }

    /// Waits until no socket is open (their closes begun by ``closeAll(_:reason:)``),
    /// for at most `timeout`; returns whether none is.
    public func waitUntilEmpty(timeout: Duration) -> Bool {
        let deadline = DispatchTime.after(timeout)
        lock.withLock { awaitingEmpty = true }
        defer { lock.withLock { awaitingEmpty = false } }
        while count > 0 {
            if emptied.wait(timeout: deadline) == .timedOut { return count == 0 }
        }
        return true
    }

    /// Stops the thread and closes what is still open; later sockets are refused.
    public func stop() {
        let running: pthread_t? = lock.withLock {
            stopped = true
            defer { thread = nil }
            return thread
        }
        if let running {
            var one: UInt64 = 1
            _ = write(wake, &one, 8)
            pthread_join(running, nil)
        }
        for connection in lock.withLock({ Array(connections.values) }) { connection.finish() }
    }

    /// Under `lock`.
    private func startIfNeeded() -> Bool {
        guard thread == nil else { return true }
        guard epoll >= 0, wake >= 0 else { return false }
        var created = pthread_t()
        let status = pthread_create(&created, nil, { raw in
            let loop = Unmanaged<WebSocketLoop>.fromOpaque(raw!).takeRetainedValue()
            loop.run()
            return nil
        }, Unmanaged.passRetained(self).toOpaque())
        guard status == 0 else { return false }
        thread = created
        return true
    }

    private func run() {
        var events = [epoll_event](repeating: epoll_event(), count: 64)
        while true {
            let ready = events.withUnsafeMutableBufferPointer { epoll_wait(epoll, $0.baseAddress, Int32($0.count), 100) }
            if lock.withLock({ stopped }) { break }
            for index in 0..<max(Int(ready), 0) {
                let token = events[index].data.u64
                guard token != 0, let connection = lock.withLock({ connections[token] }) else { continue }
                let flags = events[index].events
                if flags & EPOLLOUT.rawValue != 0 { connection.writableAgain() }
                if flags & (EPOLLIN.rawValue | EPOLLRDHUP.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0,
                   !connection.readable() {
                    connection.finish()
                }
            }
            endClosed()
        }
    }

    /// Closes the sockets whose closing is over.
    private func endClosed() {
        let closing: [WebSocketConnection] = lock.withLock {
            guard anyClosing else { return [] }
            anyClosing = false
            return Array(connections.values)
        }
        let now = ContinuousClock.now
        for connection in closing {
            if connection.closingIsOver(now: now) {
                connection.finish()
            } else if connection.isClosing {
                noteClosing()
            }
        }
    }
}
