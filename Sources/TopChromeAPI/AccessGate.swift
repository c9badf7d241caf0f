import AccessTokens
#if canImport(Glibc)
import Glibc
#endif
import Locking
import MicroHTTPD
import TopChromeCore

/// Who may do what under `/v1`: the global bearer token may do everything
/// (a backend's or an operator's credential); an access token (a JWT the
/// app's backend signed, or this service minted) may do what its `scope`
/// says to the one session its `sid` names, until its `exp`. Refusals are
/// RFC 6750's: 401 `invalid_token` (get a new token), 403
/// `insufficient_scope` (no token of this kind will do).
final class AccessGate: @unchecked Sendable {
    private let lock = PthreadLock()
    private var verifier: TokenVerifier
    private var verified = RememberedTokens()

    /// Tokens remembered at most; past it the expired go, and if none has, all do.
    static let cacheCapacity = 10_000

    typealias Grant = RememberedTokens.Grant

    init(verifier: TokenVerifier) {
        self.verifier = verifier
    }

    /// New keys or a new cut-off: tokens verified under the old ones are verified again.
    func replace(with verifier: TokenVerifier) {
        lock.withLock {
            self.verifier = verifier
            verified.removeAll()
        }
    }

    var policy: TokenVerifier.Policy { lock.withLock { verifier.policy } }

    /// The grant of a token that allows `method` on `route`; throws 401 or 403 otherwise.
    func authorize(_ credentials: ArraySlice<UInt8>, _ method: String, on route: Route?,
                   now: Int64 = Int64(time(nil))) throws(Problem) -> AccessToken {
        let grant = try grant(for: credentials, now: now)
        guard let (needed, session) = Self.need(method, route), grant.access.scope.isSuperset(of: needed),
              session == nil || grant.session == session else {
            throw Self.insufficientScope
        }
        return grant.access
    }

    private func grant(for credentials: ArraySlice<UInt8>, now: Int64) throws(Problem) -> Grant {
        let outcome: Result<Grant, TokenRefusal> = lock.withLock {
            if let grant = verified.grant(for: credentials) {
                // Never past its time: a remembered token expires as a fresh one would.
                guard now < grant.access.expiresAt + verifier.policy.leewaySeconds else {
                    verified.forget(credentials)
                    return .failure(.expired)
                }
                return .success(grant)
            }
            return Result { () throws(TokenRefusal) -> Grant in
                let access = try verifier.verify(credentials, now: now)
                let grant = Grant(access: access, session: access.sessionID.flatMap { SessionID($0) })
                remember(grant, as: credentials, now: now)
                return grant
            }
        }
        switch outcome {
        case let .success(grant): return grant
        case let .failure(refusal): throw Self.invalidToken(refusal)
        }
    }

    private func remember(_ grant: Grant, as credentials: ArraySlice<UInt8>, now: Int64) {
        if verified.count >= Self.cacheCapacity {
            verified.keep { now < $0.access.expiresAt }
            if verified.count >= Self.cacheCapacity { verified.removeAll() }
        }
        verified.remember(grant, as: credentials)
    }

    /// What a route asks of a token, and of which session; nil: no token will do
    /// (an unknown path, or a malformed id, which names no session).
    private static func need(_ method: String, _ route: Route?) -> (AccessToken.Scope, SessionID?)? {
        switch route {
        case .sessions?: return ([.create], nil)
        case let .session(id?)?: return (method == "DELETE" ? [.write] : [.read], id)
        case let .events(id?)?: return ([.read], id)
        case let .inset(id?)?, let .scroll(id?)?, let .disappear(id?)?, let .behavior(id?)?: return ([.write], id)
        default: return nil
        }
    }

    static func invalidToken(_ refusal: TokenRefusal) -> Problem {
        Problem(status: 401, detail: refusal.description,
                headers: [("WWW-Authenticate", #"Bearer realm="topchrome", error="invalid_token", error_description="\#(refusal.description)""#)],
                kind: .invalidToken)
    }

    static var insufficientScope: Problem {
        Problem(status: 403, detail: "The token does not allow this request (another session, or too little scope).",
                headers: [("WWW-Authenticate", #"Bearer realm="topchrome", error="insufficient_scope""#)], kind: .insufficientScope)
    }
}
