/// A complete response. The server adds `Content-Length` and `Date` itself and
/// leaves the body out for `HEAD` requests and 304 responses (still stating
/// its length, as for the 200 they stand for).
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: HTTPHeaders
    public var body: [UInt8]

    public init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// Answers requests. Called concurrently from the server's threads, so it
/// must be safe to share; it should not block, since a blocked call holds
/// one of the server's few threads.
public protocol HTTPResponder: Sendable {
    func respond(to request: HTTPRequest) -> HTTPResponse
}
