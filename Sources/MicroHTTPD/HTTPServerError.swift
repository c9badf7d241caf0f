public enum HTTPServerError: Error, Equatable, CustomStringConvertible {
    case cannotListen(host: String, port: Int, reason: String)
    case cannotStart(reason: String)
    case alreadyStarted

    public var description: String {
        switch self {
        case let .cannotListen(host, port, reason):
            return "cannot listen on \(host):\(port): \(reason)"
        case let .cannotStart(reason):
            return "cannot start the HTTP server: \(reason)"
        case .alreadyStarted:
            return "the HTTP server is already running"
        }
    }
}
