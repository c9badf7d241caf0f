/// The shared secret that guards the session API when one is configured.
/// A session id already is a capability; the token keeps strangers from
/// creating sessions or probing ids at all.
struct BearerToken: Sendable {
    private let secret: [UInt8]

    init(_ token: String) {
        secret = Array(token.utf8)
    }

    /// Passes `Authorization: Bearer <token>` with the right token, else 401.
    func check(_ authorization: String?) throws(Problem) {
        guard let authorization else {
            throw Self.unauthorized("This API needs 'Authorization: Bearer <token>'.", challenge: #"Bearer realm="topchrome""#)
        }
        let parts = authorization.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer", matches(Array(parts[1].utf8)) else {
            throw Self.unauthorized("The bearer token is not valid.",
                                    challenge: #"Bearer realm="topchrome", error="invalid_token""#)
        }
    }

    /// Compares in time that depends only on the secret's length, so the
    /// answer's timing does not tell how much of a guess was right.
    func matches(_ candidate: [UInt8]) -> Bool {
        var difference: UInt8 = candidate.count == secret.count ? 0 : 1
        for index in secret.indices {
            difference |= secret[index] ^ (index < candidate.count ? candidate[index] : 0)
        }
        return difference == 0
    }

    private static func unauthorized(_ detail: String, challenge: String) -> Problem {
        Problem(status: 401, detail: detail, headers: [("WWW-Authenticate", challenge)])
    }
}
