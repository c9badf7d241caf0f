/// What a test of the API's contract asks through, whatever carries the
/// request: the API in this process (``InProcessClient``), a socket to a
/// live server, or a transport still to come. A test written against it
/// runs unchanged on each, as Hummingbird's tests run on its router and
/// on a live server.
public protocol ContractClient {
    /// The answer to one request, once there is one; a nil `body` sends
    /// none at all, where an empty one is sent as empty.
    func execute(_ method: String, _ path: String, headers: [(String, String)], body: [UInt8]?) throws -> ReceivedResponse
}

extension ContractClient {
    @discardableResult
    public func request(_ method: String, _ path: String, headers: [(String, String)] = [],
                        body: [UInt8]? = nil) throws -> ReceivedResponse {
        try execute(method, path, headers: headers, body: body)
    }

    /// A JSON request, as `curl --json` sends it.
    @discardableResult
    public func json(_ method: String, _ path: String, _ body: String, headers: [(String, String)] = []) throws -> ReceivedResponse {
        try execute(method, path, headers: [("Content-Type", "application/json")] + headers, body: Array(body.utf8))
    }
}
