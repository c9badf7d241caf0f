import MicroHTTPD
import SessionSnapshots

/// Why the service could not start, and the exit status that says so.
public enum StartupError: Error, CustomStringConvertible {
    case server(HTTPServerError)
    case stateFile(SnapshotFile.Failure)
    /// The Redis user may not run commands the store sends (`ACL DRYRUN` said so).
    case redisPermissions(String)

    public var description: String {
        switch self {
        case let .server(error): error.description
        case let .stateFile(failure): failure.description
        case let .redisPermissions(line): line
        }
    }

    /// 2 for configuration the operator must fix (like a bad flag), 1 otherwise.
    /// What the server refuses as it starts, besides an address it cannot
    /// listen on, is its configuration: the TLS certificate or key.
    public var exitStatus: Int32 {
        switch self {
        case .stateFile, .server(.cannotStart), .redisPermissions: 2
        case .server: 1
        }
    }
}
