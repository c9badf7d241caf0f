/// What the server sends for a request: an answer decided now, a stream,
/// or an answer that comes later. The server adds `Content-Length` and `Date`
/// itself and leaves the body out for `HEAD` requests and 304 responses
/// (still stating its length, as for the 200 they stand for).
public enum MicroHTTPDResponse: Sendable {
    case complete(CompleteResponse)
    case stream(StreamingResponse)
    /// No answer yet: the request waits, holding no thread, until the
    /// pending response is completed. `endpoint`: see ``MicroHTTPDResponse/endpoint``.
    case later(PendingResponse, endpoint: Int? = nil)
    /// 101: the connection becomes another protocol's.
    case upgrade(UpgradeResponse)

    /// A complete response.
    public init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        self = .complete(CompleteResponse(status: status, headers: headers, body: body))
    }

    /// A response whose body is `stream`.
    public static func streaming(status: Int, headers: HTTPHeaders, stream: ResponseStream) -> MicroHTTPDResponse {
        .stream(StreamingResponse(status: status, headers: headers, stream: stream))
    }

    /// The responder's own number for the kind of request it answered (e.g.
    /// its route), handed to the ``HTTPExchangeObserver`` so metrics and logs
    /// need not read the path a second time.
    public var endpoint: Int? {
        get {
            switch self {
            case let .complete(response): response.endpoint
            case let .stream(response): response.endpoint
            case let .later(_, endpoint): endpoint
            case let .upgrade(response): response.endpoint
            }
        }
        set {
            switch self {
            case var .complete(response):
                response.endpoint = newValue
                self = .complete(response)
            case var .stream(response):
                response.endpoint = newValue
                self = .stream(response)
            case let .later(pending, _):
                self = .later(pending, endpoint: newValue)
            case var .upgrade(response):
                response.endpoint = newValue
                self = .upgrade(response)
            }
        }
    }

    /// Adds `fields` to the answer, whichever it is and whenever it comes.
    public mutating func addHeaders(_ fields: HTTPHeaders) {
        if case let .later(pending, _) = self {
            pending.addToAnswer(fields)
        } else if var decided = DecidedResponse(self) {
            decided.addHeaders(fields)
            self = decided.answer
        }
    }
}

/// An answer with its whole body.
public struct CompleteResponse: Sendable {
    public var status: Int
    public var headers: HTTPHeaders
    public var body: [UInt8]
    /// See ``MicroHTTPDResponse/endpoint``; an answer that came later may know more
    /// than the request did (e.g. the id of a session it created).
    public var endpoint: Int?

    public init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// An answer whose body is sent as it is written (sent chunked).
public struct StreamingResponse: Sendable {
    public var status: Int
    public var headers: HTTPHeaders
    public var stream: ResponseStream
    /// See ``MicroHTTPDResponse/endpoint``.
    public var endpoint: Int?

    public init(status: Int, headers: HTTPHeaders, stream: ResponseStream) {
        self.status = status
        self.headers = headers
        self.stream = stream
    }
}

/// What a pending response is completed with: never another "later".
enum DecidedResponse: Sendable {
    case complete(CompleteResponse)
    case stream(StreamingResponse)
    /// A 101 decided once the store answered (a WebSocket whose session is in Redis).
    case upgrade(UpgradeResponse)

    /// nil for a response that is still to come.
    init?(_ response: MicroHTTPDResponse) {
        switch response {
        case let .complete(response): self = .complete(response)
        case let .stream(response): self = .stream(response)
        case let .upgrade(response): self = .upgrade(response)
        case .later: return nil
        }
    }

    /// The same answer as the server's callers see it.
    var answer: MicroHTTPDResponse {
        switch self {
        case let .complete(response): .complete(response)
        case let .stream(response): .stream(response)
        case let .upgrade(response): .upgrade(response)
        }
    }

    var endpoint: Int? {
        switch self {
        case let .complete(response): response.endpoint
        case let .stream(response): response.endpoint
        case let .upgrade(response): response.endpoint
        }
    }

    mutating func addHeaders(_ fields: HTTPHeaders) {
        switch self {
        case var .complete(response):
            response.headers.add(contentsOf: fields)
            self = .complete(response)
        case var .stream(response):
            response.headers.add(contentsOf: fields)
            self = .stream(response)
        case var .upgrade(response):
            response.headers.add(contentsOf: fields)
            self = .upgrade(response)
        }
    }
}

/// Answers requests. Called concurrently from the server's threads, so it
/// must be safe to share; it should not block, since a blocked call holds
/// one of the server's few threads.
public protocol HTTPResponder: Sendable {
    func respond(to request: MicroHTTPDRequest) -> MicroHTTPDResponse

    /// ``respond(to:)`` with room to write the answer in: the buffers of the
    /// connection's last response, emptied. A responder that takes them
    /// answers a keep-alive client without allocating per response; the
    /// server takes the response's buffers back once libmicrohttpd has
    /// copied the answer.
    func respond(to request: MicroHTTPDRequest, reusing buffers: inout ResponseBuffers) -> MicroHTTPDResponse

    /// The answer to a request that arrives while the server stops (a new
    /// request on a kept-alive connection, a wait that stopping cuts short).
    /// It is not served: work that began before the stop finishes, new work
    /// is refused cleanly rather than cut off halfway.
    func refusalWhileStopping() -> CompleteResponse

    /// The answer to a request refused from its head alone (see
    /// ``RequestHeadFault``), with `fault.status`. The responder never sees
    /// the request itself; the server adds `Connection: close`.
    func refusal(of fault: RequestHeadFault) -> CompleteResponse
}

/// What a finished exchange looked like, for access logs and metrics.
public struct HTTPExchange: Sendable {
    public var method: String
    public var path: String {
        get { String(decoding: pathBytes, as: UTF8.self) }
        set { pathBytes = Array(newValue.utf8) }
    }
    /// ``path`` as the bytes that came (see ``MicroHTTPDRequest/pathBytes``).
    public var pathBytes: [UInt8]
    /// Who asked: the peer's address, or behind a trusted proxy the client
    /// it names in `X-Forwarded-For`; nil if the socket named none.
    public var client: String?
    /// The ``MicroHTTPDResponse/endpoint`` the responder gave; nil if it gave none
    /// or never saw the request (refused early).
    public var endpoint: Int?
    public var status: Int
    /// Body bytes sent: 0 for HEAD and 304, which send none, and for
    /// streams, whose length is open when the exchange is recorded.
    public var bodyBytes: Int
    /// From the request's arrival to its response being queued (a long-poll's wait included).
    public var duration: Duration
    public var isStream: Bool
    /// The trace and request ids its log lines carry; nil only for an
    /// exchange made outside the server (tests).
    public var identity: RequestIdentity?
}

extension HTTPExchange {
    // In an extension, so that the memberwise initializer the server uses
    // is the compiler's own: with one written out, each exchange was built
    // aside, then copied (a retain per field) and the first destroyed.
    public init(method: String, path: String, client: String? = nil, endpoint: Int?, status: Int, bodyBytes: Int,
                duration: Duration, isStream: Bool, identity: RequestIdentity? = nil) {
        self.init(method: method, pathBytes: Array(path.utf8), client: client, endpoint: endpoint, status: status,
                  bodyBytes: bodyBytes, duration: duration, isStream: isStream, identity: identity)
    }
}

/// Told of every exchange once its response is queued. An object, so that
/// reaching it per request is a retain, not a copy of an opaque existential.
public protocol HTTPExchangeObserver: AnyObject, Sendable {
    func completed(_ exchange: HTTPExchange)
}

/// Empty buffers with room for a response, lent by the server (see
/// ``HTTPResponder/respond(to:reusing:)``). Take them, rather than copy
/// them: a copy shares the storage, and the first write would then
/// allocate after all.
public struct ResponseBuffers: Sendable {
    var headers = HTTPHeaders()
    var body: [UInt8] = []

    public init() {}

    public mutating func takeHeaders() -> HTTPHeaders {
        var taken = HTTPHeaders()
        swap(&taken, &headers)
        return taken
    }

    public mutating func takeBody() -> [UInt8] {
        var taken: [UInt8] = []
        swap(&taken, &body)
        return taken
    }

    /// Keeps the sent response's buffers, emptied, when they hold more room
    /// than these and no more than `limit` bytes (one large answer should not
    /// hold memory for the rest of the connection).
    mutating func keep(_ response: inout CompleteResponse, limit: Int) {
        keep(headers: &response.headers, limit: limit)
        keep(body: &response.body, limit: limit)
    }

    mutating func keep(headers sent: inout HTTPHeaders, limit: Int) {
        if sent.byteCapacity > headers.byteCapacity, sent.byteCapacity <= limit {
            swap(&headers, &sent)
            headers.removeAll(keepingCapacity: true)
        }
    }

    mutating func keep(body sent: inout [UInt8], limit: Int) {
        if sent.capacity > body.capacity, sent.capacity <= limit {
            swap(&body, &sent)
            body.removeAll(keepingCapacity: true)
        }
    }
}

extension HTTPResponder {
    public func respond(to request: MicroHTTPDRequest, reusing buffers: inout ResponseBuffers) -> MicroHTTPDResponse {
        respond(to: request)
    }

    public func refusalWhileStopping() -> CompleteResponse {
        CompleteResponse(status: 503, headers: HTTPHeaders([("Content-Type", "text/plain"), ("Retry-After", "1")]),
                     body: Array("The server is stopping.\n".utf8))
    }

    public func refusal(of fault: RequestHeadFault) -> CompleteResponse {
        CompleteResponse(status: fault.status, headers: HTTPHeaders([("Content-Type", "text/plain")]),
                     body: Array((fault.explanation + "\n").utf8))
    }
}
