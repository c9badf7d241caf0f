import MicroHTTPD

/// Session creations as ``CreationRateLimit`` allows them, told to clients
/// in the fields of draft-ietf-httpapi-ratelimit-headers-11 (May 2026):
/// `RateLimit-Policy: "create";q=<burst>;w=<seconds to fill>` and
/// `RateLimit: "create";r=<creations left>;t=<seconds>`, structured-field
/// lists of one item each (RFC 9651). On a creation allowed, `t` is when
/// the bucket is full again; on a 429 it is when the next creation is
/// allowed, which `Retry-After` says too (the draft: Retry-After no
/// earlier than the window's end).
extension SessionAPI {
    static let creationPolicyName = "create"

    /// The fields for an allowed creation; throws the 429 for one refused.
    static func allowance(_ limit: CreationRateLimit, _ request: MicroHTTPDRequest) throws(Problem) -> HTTPHeaders {
        let policy = "\"\(creationPolicyName)\";q=\(limit.policy.burst);w=\(limit.policy.window)"
        switch limit.take(for: request.client) {
        case let .allowed(remaining, fullIn):
            return HTTPHeaders([("RateLimit-Policy", policy),
                                ("RateLimit", "\"\(creationPolicyName)\";r=\(remaining);t=\(fullIn)")])
        case let .limited(retryAfter):
            throw Problem(
                status: 429,
                detail: "This address created sessions faster than \(limit.policy.perSecond) a second; try again in \(retryAfter) s.",
                headers: [("Retry-After", String(retryAfter)), ("RateLimit-Policy", policy),
                          ("RateLimit", "\"\(creationPolicyName)\";r=0;t=\(retryAfter)")],
                kind: .quotaExceeded(policy: creationPolicyName))
        }
    }
}
