import AccessTokens
#if canImport(Glibc)
import Glibc
#endif
import Locking
import MicroHTTPD
import StrictJSON
import TopChromeCore

/// Tokens this service mints, so a backend with no crypto of its own can
/// hand an app a token for one session: its key, replaced on reload (the
/// verifier learns the new public key at the same moment), and the longest
/// lifetime a token may ask for.
final class TokenMinting: @unchecked Sendable {
    private let lock = PthreadLock()
    private var signer: TokenSigner
    let maxLifetime: Int

    init(signer: TokenSigner, maxLifetime: Int) {
        self.signer = signer
        self.maxLifetime = maxLifetime
    }

    func replace(with signer: TokenSigner) {
        lock.withLock { self.signer = signer }
    }

    var current: TokenSigner { lock.withLock { signer } }

    /// Said for both routes when no key is configured: the resources do not exist here.
    static let off = Problem.notFound(
        "This server mints no tokens: it was started without --token-signing-key.")
}

extension SessionAPI {
    /// `POST /v1/sessions/{id}/tokens`, for the global token only (an access
    /// token is refused before this, by `AccessGate`): a token for a session
    /// that exists, never stored or cached anywhere.
    func mintToken(for id: SessionID, _ request: MicroHTTPDRequest, _ minting: TokenMinting,
                   endpoint: Int) throws(Problem) -> MicroHTTPDResponse {
        let cap = minting.maxLifetime
        let (scope, lifetime) = try body(of: request) { bytes throws(BodyError) in
            try RequestBodies.tokenRequest(bytes, maxLifetime: cap)
        }
        let signer = minting.current
        @Sendable func minted(_ session: Session?) throws(Problem) -> CompleteResponse {
            guard session != nil else { throw Self.unknownSession }
            let now = Int64(time(nil))
            let token = signer.token(sessionID: id.description, scope: scope, now: now, lifetime: Int64(lifetime))
            var json = JSONWriter()
            json.object { object in
                object.member("token") { $0.string(token) }
                object.member("expiresAt") { $0.number(now + Int64(lifetime)) }
            }
            return CompleteResponse(status: 200, headers: HTTPHeaders([("Content-Type", "application/json"), ("Cache-Control", "no-store")]),
                                    body: json.bytes)
        }
        switch store.requestSession(id) {
        case let .now(result):
            return .complete(try minted(Self.value(result)))
        case let .later(answer):
            let pending = PendingResponse()
            answer.whenAnswered { result in
                do throws(Problem) {
                    pending.complete(with: try minted(Self.value(result)))
                } catch {
                    pending.complete(with: error.response)
                }
            }
            return .later(pending, endpoint: endpoint)
        }
    }

    /// `GET /.well-known/jwks.json`: the public key of minted tokens, for
    /// other replicas' operators and anyone else to verify with.
    static func keySetAnswer(_ minting: TokenMinting) -> MicroHTTPDResponse {
        MicroHTTPDResponse(status: 200, headers: HTTPHeaders([("Content-Type", "application/json"),
                                                              ("Cache-Control", "public, max-age=300")]),
                           body: minting.current.jwks)
    }
}
