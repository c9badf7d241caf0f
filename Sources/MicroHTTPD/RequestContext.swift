/// The state of a connection's current request, from the first call of the
/// access handler to the completion callback.
///
/// One per connection, made when libmicrohttpd accepts it and reused by each
/// request on it: keep-alive clients send thousands of requests, and a reused
/// context's buffers cost them no allocation. It lives behind a pointer that
/// only the connection's thread touches, as libmicrohttpd's own per-connection
/// state does.
struct RequestContext {
    private(set) var method = ""
    /// The target's path (see ``MicroHTTPDRequest/pathBytes``), in a buffer each request reuses.
    private(set) var path: [UInt8] = []
    private(set) var version = ""
    private(set) var startedAt = RequestStart.now
    /// The request's header fields, collected on its first call.
    var headers = HTTPHeaders()
    var body: [UInt8] = []
    /// Room for the answers on this connection (see ``HTTPResponder/respond(to:reusing:)``).
    var responseBuffers = ResponseBuffers()
    /// The body of the answer being sent, which libmicrohttpd reads in
    /// place rather than from a copy of its own: held until the request
    /// completes, after which libmicrohttpd never reads it again.
    private(set) var sentBody: [UInt8] = []
    var isBodyTooLarge = false
    /// Set while the request waits for a later answer.
    var pending: PendingResponse?
    /// What takes the connection once its 101 is sent (``UpgradeResponse``).
    var upgraded: (@Sendable (UpgradedSocket) -> Void)?
    /// Answered on the first call, before the body: the rest is ignored.
    var isAnswered = false
    /// The responder's name for what was asked, for the observer.
    var endpoint: Int?
    /// Counted in `inFlight`: a stop waits for it.
    var countsInFlight = false
    /// Between `begin` and `reset`: a context serves one request at a time.
    private(set) var isInUse = false
    /// Its connection closed while a request still used it: the request's
    /// completion frees it.
    var isOrphaned = false
    /// Made for one request only (its connection had no free context): freed with it.
    var isForOneRequest = false
    /// The server's certificates, for this connection's TLS handshake, which
    /// runs before any request and finds the server only through this
    /// context. Set once for the connection, so ``reset()`` keeps it.
    var tlsIdentities: Unmanaged<TLSIdentities>?
    /// The peer's address (see ``HTTPExchange/client``); set once for the connection.
    var client: String?
    /// The connection as the server's own checks see it (a request's
    /// deadline); set once for the connection, released with the context.
    /// Nil in a context made for one request.
    var connection: Unmanaged<OpenConnection>?

    /// The request's own ids, read as its head is checked (``headFault()``).
    var givenIdentity = GivenIdentity()

    /// Made request ids on this connection: its prefix, and its requests
    /// counted (see ``RequestIdentity``). Kept by ``reset()``.
    private let idPrefix = RequestIdentity.connectionPrefix()
    private var requestNumber: UInt64 = 0

    /// The current request's identity, from its fields or made. Mutating
    /// only so that, reached through the context's pointer, it reads in
    /// place rather than from a copy of the whole context.
    mutating func currentIdentity() -> RequestIdentity {
        RequestIdentity(given: givenIdentity, prefix: idPrefix, number: requestNumber)
    }

    /// The reason to refuse the request's head, if any (see
    /// ``HTTPHeaders/headFault(version:)``); notes its own ids on the way,
    /// and the length its `Content-Length` declares.
    mutating func headFault(declaredLength: inout Int?) -> RequestHeadFault? {
        headers.headFault(version: version, noting: &givenIdentity, declaredLength: &declaredLength)
    }

    /// Buffers above this many bytes are let go between requests, so one
    /// large upload does not hold memory for the rest of the connection.
    static let keptCapacity = 4096

    /// `target`: the request target as libmicrohttpd hands it over.
    mutating func begin(method: String, target: UnsafePointer<CChar>, version: String) {
        self.method = method
        HTTPTokens.path(target, into: &path)
        self.version = version
        startedAt = .now
        requestNumber &+= 1
        isInUse = true
    }

    /// Ready for the connection's next request.
    mutating func reset() {
        method = ""
        path.removeAll(keepingCapacity: path.capacity <= Self.keptCapacity)
        version = ""
        headers.removeAll(keepingCapacity: headers.byteCapacity <= Self.keptCapacity)
        if !givenIdentity.isEmpty { givenIdentity = GivenIdentity() }
        if !body.isEmpty { body.removeAll(keepingCapacity: body.capacity <= Self.keptCapacity) }
        if sentBody.capacity > 0 {
            responseBuffers.keep(body: &sentBody, limit: Self.keptCapacity)
            sentBody = []
        }
        isBodyTooLarge = false
        pending = nil
        upgraded = nil
        isAnswered = false
        endpoint = nil
        countsInFlight = false
        isInUse = false
    }

    /// The request for the responder. Its buffers are moved into it, not
    /// shared (sharing is a retain and a release each); ``takeBack(_:)``
    /// moves them back once the responder has answered.
    mutating func lendRequest() -> MicroHTTPDRequest {
        var lentPath: [UInt8] = [], lentHeaders = HTTPHeaders(), lentBody: [UInt8] = []
        swap(&path, &lentPath)
        swap(&headers, &lentHeaders)
        swap(&body, &lentBody)
        return MicroHTTPDRequest(method: method, pathBytes: lentPath, version: version, headers: lentHeaders, body: lentBody,
                           isBodyTooLarge: isBodyTooLarge)
    }

    // `mutating` though they change nothing here: called on a pointer's
    // `pointee`, a non-mutating method copies the whole context first.

    /// The head is whole; false if the connection was answered 408 meanwhile.
    mutating func headArrived() -> Bool {
        connection?._withUnsafeGuaranteedRef { $0.headArrived() } ?? true
    }

    /// The request is read and gets its answer; false if the connection was
    /// answered 408 meanwhile (then nothing more may be written to it).
    mutating func answering() -> Bool {
        connection?._withUnsafeGuaranteedRef { $0.answering() } ?? true
    }

    /// Holds `body` while libmicrohttpd sends it (see ``sentBody``) and
    /// returns its bytes, valid until ``reset()``; nil if a body is held
    /// already (a request has one answer; a second is copied, never let go
    /// of the first while it may still be read).
    mutating func holdWhileSent(_ body: inout [UInt8]) -> UnsafeRawBufferPointer? {
        guard sentBody.capacity == 0 else { return nil }
        swap(&sentBody, &body)
        return sentBody.withUnsafeBytes { $0 }
    }

    mutating func takeBack(_ request: inout MicroHTTPDRequest) {
        swap(&path, &request.pathBytes)
        swap(&headers, &request.headers)
        swap(&body, &request.body)
    }

    /// Keeps bytes up to the limit; past it, drops what was kept and
    /// discards the rest as it arrives.
    mutating func receive(_ bytes: UnsafeRawBufferPointer, limit: Int) {
        guard !isBodyTooLarge else { return }
        if body.count + bytes.count > limit {
            isBodyTooLarge = true
            body = []
        } else {
            body.append(contentsOf: bytes)
        }
    }
}

extension UnsafeMutablePointer<RequestContext> {
    static func makeContext() -> Self {
        let context = allocate(capacity: 1)
        context.initialize(to: RequestContext())
        return context
    }

    func free() {
        pointee.connection?.release()
        deinitialize(count: 1)
        deallocate()
    }
}
