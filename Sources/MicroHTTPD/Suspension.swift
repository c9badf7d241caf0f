import CMicroHTTPD
import Dispatch
import Locking

/// Something that holds a connection suspended while it waits for data.
/// libmicrohttpd must see every suspended connection resumed before it
/// stops, so the server can end all of them at shutdown.
protocol Suspending: AnyObject, Sendable {
    /// Ends the wait at once: a stream finishes, a pending response gets `fallback`.
    func terminate(fallback: CompleteResponse)
    /// Ends the wait if the connection is suspended and its client has
    /// closed it: libmicrohttpd would notice only when resumed.
    func endIfClientLeft()
}

/// Suspension bookkeeping shared by streams and pending responses. Resuming a
/// connection that is not suspended is undefined behaviour in libmicrohttpd,
/// so whether it is suspended is tracked here, under the owner's lock.
struct SuspendedConnection {
    private(set) var connection: OpaquePointer?
    private(set) var isSuspended = false

    mutating func attach(_ connection: OpaquePointer) {
        self.connection = connection
    }

    /// Only from libmicrohttpd's thread serving the connection (a callback).
    mutating func suspend() {
        guard let connection, !isSuspended else { return }
        isSuspended = true
        MHD_suspend_connection(connection)
    }

    /// From any thread.
    mutating func resume() {
        guard let connection, isSuspended else { return }
        isSuspended = false
        MHD_resume_connection(connection)
    }

    mutating func detach() {
        connection = nil
        isSuspended = false
    }

    /// Whether the connection sleeps and its client has closed it. Only
    /// under the owner's lock: a suspended connection stays set up (and its
    /// socket open) until it is resumed, which takes that lock.
    var isSuspendedAndLeft: Bool {
        guard isSuspended, let connection else { return false }
        let descriptor = CMHD_connection_descriptor(connection)
        return descriptor >= 0 && CMHD_peer_has_left(descriptor) != 0
    }
}

/// The body of a response that is sent as it is written, e.g. Server-Sent
/// Events. Writing never blocks: bytes wait in a bounded buffer until the
/// connection can take them, and the connection sleeps (suspended, holding
/// no thread) while there is nothing to send.
public final class ResponseStream: @unchecked Sendable, Suspending {
    /// Bytes that may wait for a slow client; past this, writes are refused
    /// and the writer decides (usually: close, and let the client reconnect).
    public let maxBuffered: Int

    private let lock = PthreadLock()
    private var pending: [UInt8] = []
    private var isFinished = false
    private var isClosed = false
    private var suspension = SuspendedConnection()
    private var closeHandler: (@Sendable () -> Void)?
    /// Set while registered; cleared at close, which ends the reference cycle.
    /// (Not `weak`: LeakSanitizer takes a weak reference table still alive at exit for a leak.)
    var registry: SuspensionRegistry?

    public init(maxBuffered: Int = 64 * 1024) {
        self.maxBuffered = maxBuffered
    }

    /// Called once when the stream is over: finished and sent, or the client left.
    /// Runs on a background queue, never under the server's locks.
    public func onClose(_ handler: @escaping @Sendable () -> Void) {
        lock.withLock { closeHandler = handler }
    }

    /// Queues bytes for the client. False if the stream is over, or the
    /// client is so far behind that the buffer is full.
    @discardableResult
    public func write(_ bytes: [UInt8]) -> Bool {
        lock.withLock {
            guard !isFinished, !isClosed, pending.count + bytes.count <= maxBuffered else { return false }
            pending.append(contentsOf: bytes)
            suspension.resume()
            return true
        }
    }

    /// Ends the stream once everything written so far is sent.
    public func finish() {
        lock.withLock {
            isFinished = true
            suspension.resume()
        }
    }

    func terminate(fallback: CompleteResponse) {
        finish()
    }

    /// Ended as if finished: libmicrohttpd, resumed, ends the response and
    /// finds the connection closed; the close handler runs as for any end.
    func endIfClientLeft() {
        lock.withLock {
            guard suspension.isSuspendedAndLeft else { return }
            isFinished = true
            suspension.resume()
        }
    }

    public var isOpen: Bool {
        lock.withLock { !isFinished && !isClosed }
    }

    func attach(to connection: OpaquePointer, registry: SuspensionRegistry) {
        lock.withLock {
            suspension.attach(connection)
            self.registry = registry
        }
        registry.add(self)
    }

    /// libmicrohttpd's content reader: copies what is pending, or suspends
    /// the connection until `write` or `finish` resumes it.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        lock.withLock {
            if !pending.isEmpty {
                let count = min(buffer.count, pending.count)
                pending.withUnsafeBytes { buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[..<count])) }
                pending.removeFirst(count)
                return count
            }
            if isFinished { return -1 }  // MHD_CONTENT_READER_END_OF_STREAM
            suspension.suspend()
            return 0
        }
    }

    /// The response is released: the stream is over for good.
    func closed() {
        let (handler, registry) = lock.withLock {
            isClosed = true
            pending = []
            suspension.detach()
            defer { closeHandler = nil; self.registry = nil }
            return (closeHandler, self.registry)
        }
        registry?.remove(self)
        if let handler { DispatchQueue.global().async(execute: handler) }
    }
}

/// A response decided later: the request is kept waiting (suspended, holding
/// no thread) until `complete` is called, e.g. a long-poll that answers when
/// something changes or its time is up.
public final class PendingResponse: @unchecked Sendable, Suspending {
    private let lock = PthreadLock()
    private var response: DecidedResponse?
    private var suspension = SuspendedConnection()
    /// Fields for the answer that comes, whichever it is.
    private var addedFields: HTTPHeaders?
    /// Held until the request is answered, either way.
    private var clientLeftHandler: (@Sendable () -> Void)?

    public init() {}

    /// Answers the request. Only the first answer counts; returns whether this one did.
    @discardableResult
    public func complete(with response: CompleteResponse) -> Bool {
        decide(.complete(response))
    }

    /// Answers the request with a stream (e.g. once a store in another
    /// process said the session exists). Only the first answer counts.
    @discardableResult
    public func complete(with response: StreamingResponse) -> Bool {
        decide(.stream(response))
    }

    /// Answers the request with a 101 (see ``complete(with:)-(CompleteResponse)``).
    @discardableResult
    public func complete(with response: UpgradeResponse) -> Bool {
        decide(.upgrade(response))
    }

    private func decide(_ response: DecidedResponse) -> Bool {
        lock.withLock {
            guard self.response == nil else { return false }
            var response = response
            if let addedFields { response.addHeaders(addedFields) }
            self.response = response
            clientLeftHandler = nil
            suspension.resume()
            return true
        }
    }

    /// Called once if the client closes the connection while the request
    /// waits (so what waits on its behalf can stop); never after an answer.
    /// Runs on a background queue, never under the server's locks.
    public func onClientLeft(_ handler: @escaping @Sendable () -> Void) {
        lock.withLock {
            if response == nil { clientLeftHandler = handler }
        }
    }

    /// What the access log says of a request whose client left: nginx's
    /// 499. Never sent: the connection is closed instead.
    static let clientLeftStatus = 499

    /// The client closed the connection while the request waited.
    var clientHasLeft: Bool {
        lock.withLock { hasLeft }
    }
    private var hasLeft = false

    func endIfClientLeft() {
        let handler: (@Sendable () -> Void)? = lock.withLock {
            guard response == nil, suspension.isSuspendedAndLeft else { return nil }
            hasLeft = true
            response = .complete(CompleteResponse(status: Self.clientLeftStatus, headers: HTTPHeaders()))
            defer { clientLeftHandler = nil }
            suspension.resume()
            return clientLeftHandler
        }
        if let handler { DispatchQueue.global().async(execute: handler) }
    }

    /// Adds `fields` to the answer, whenever and by whichever path it comes
    /// (a reply, a timeout, a stop): for what the responder decides from the
    /// request itself, such as headers every answer to it carries. Call it
    /// before handing the response to the server.
    public func addToAnswer(_ fields: HTTPHeaders) {
        lock.withLock {
            if response != nil {
                response?.addHeaders(fields)
            } else {
                addedFields = addedFields.map { var all = $0; all.add(contentsOf: fields); return all } ?? fields
            }
        }
    }

    public var isCompleted: Bool {
        lock.withLock { response != nil }
    }

    /// The answer once there is one, for a caller with no connection to
    /// wait on (a test, a fuzz harness); nil while the request still waits.
    public var answer: MicroHTTPDResponse? {
        lock.withLock { response?.answer }
    }

    func terminate(fallback: CompleteResponse) {
        complete(with: fallback)
    }

    /// The answer if there is one; else suspends the connection until there is.
    func answerOrSuspend(_ connection: OpaquePointer) -> DecidedResponse? {
        lock.withLock {
            if let response {
                suspension.detach()
                return response
            }
            suspension.attach(connection)
            suspension.suspend()
            return nil
        }
    }
}

/// Every stream and pending response that may hold a connection suspended,
/// so a stop can end them all before libmicrohttpd stops.
final class SuspensionRegistry: @unchecked Sendable {
    private let lock = PthreadLock()
    private var members: [ObjectIdentifier: any Suspending] = [:]
    private var fallback: CompleteResponse?

    /// Adds `member`; once stopping, ends it at once instead.
    func add(_ member: any Suspending) {
        let late: CompleteResponse? = lock.withLock {
            guard fallback == nil else { return fallback }
            members[ObjectIdentifier(member)] = member
            return nil
        }
        if let late { member.terminate(fallback: late) }
    }

    func remove(_ member: any Suspending) {
        _ = lock.withLock { members.removeValue(forKey: ObjectIdentifier(member)) }
    }

    var count: Int {
        lock.withLock { members.count }
    }

    /// Ends the members whose client has left (see ``Suspending/endIfClientLeft()``).
    func endThoseWhoseClientLeft() {
        let all: [any Suspending] = lock.withLock { Array(members.values) }
        for member in all { member.endIfClientLeft() }
    }

    /// Ends every member, and every one added from now on, with `fallback`.
    func terminateAll(fallback: CompleteResponse) {
        let all: [any Suspending] = lock.withLock {
            self.fallback = fallback
            defer { members = [:] }
            return Array(members.values)
        }
        for member in all { member.terminate(fallback: fallback) }
    }
}
