/// What a verified token lets its bearer do: read or write one session
/// (`sid` and `scope`), or create sessions (`create`), until `exp`.
public struct AccessToken: Sendable, Equatable {
    /// What a token may do, from its space-separated `scope` claim (RFC 8693 §4.2).
    public struct Scope: OptionSet, Sendable, Hashable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }

        /// GET, HEAD, long-polls and event streams of its session.
        public static let read = Scope(rawValue: 1)
        /// Everything that changes its session (and, with it, reading).
        public static let write = Scope(rawValue: 2)
        /// Creating sessions (a token with no `sid`).
        public static let create = Scope(rawValue: 4)

        /// Unknown words are ignored, as OAuth's scopes are: a newer issuer's
        /// wider grants give an older server nothing it does not know.
        init(claim: String) {
            var scope: Scope = []
            for word in claim.split(separator: " ") {
                switch word {
                case "read": scope.insert(.read)
                case "write": scope.formUnion([.read, .write])
                case "create": scope.insert(.create)
                default: break
                }
            }
            self = scope
        }
    }

    /// The session it is good for (`sid`); nil for a token that only creates.
    public let sessionID: String?
    public let scope: Scope
    /// `exp`, in seconds since 1970: nothing it opened outlives it.
    public let expiresAt: Int64
    /// `iat`, when the token has it: a revocation cut-off refuses tokens issued before it.
    public let issuedAt: Int64?

    public init(sessionID: String?, scope: Scope, expiresAt: Int64, issuedAt: Int64?) {
        self.sessionID = sessionID
        self.scope = scope
        self.expiresAt = expiresAt
        self.issuedAt = issuedAt
    }

    /// Whether it lets its bearer do `needed` to `session` (nil: no session, i.e. creating).
    public func allows(_ needed: Scope, on session: String?) -> Bool {
        guard scope.isSuperset(of: needed) else { return false }
        guard let session else { return true }
        return sessionID == session
    }
}
