import Locking

/// The shared secret that guards the session API when one is configured.
/// A session id already is a capability; the token keeps strangers from
/// creating sessions or probing ids at all.
struct BearerToken: Sendable {
    private let secret: [UInt8]

    init(_ token: String) {
        secret = Array(token.utf8)
    }

    /// Passes `Authorization: Bearer <token>` with the right token, else 401.
    /// The scheme is any case and is followed by one or more spaces (RFC 9110
    /// §11.4, RFC 6750 §2.1); white space around the field value is not part
    /// of it (RFC 9110 §5.5), so a trailing space or tab is dropped.
    func check(_ authorization: ArraySlice<UInt8>?) throws(Problem) {
        guard let authorization else { throw Self.missing }
        guard let credentials = Self.credentials(in: authorization), matches(credentials) else { throw Self.invalid }
    }

    /// The credentials of `Bearer <credentials>`, or nil for another scheme
    /// or none; `authorization` is the field's value as it came (see
    /// ``HTTPHeaders/firstValueBytes(of:)``).
    static func credentials(in authorization: ArraySlice<UInt8>) -> ArraySlice<UInt8>? {
        var start = authorization.startIndex, end = authorization.endIndex
        while end > start, isBlank(authorization[end - 1]) { end -= 1 }
        while start < end, isBlank(authorization[start]) { start += 1 }
        let schemeEnd = start + scheme.count
        guard schemeEnd < end, authorization[schemeEnd] == UInt8(ascii: " ") else { return nil }
        for offset in scheme.indices where authorization[start + offset] | 0x20 != scheme[offset] { return nil }
        var credentialsStart = schemeEnd
        while authorization[credentialsStart] == UInt8(ascii: " ") { credentialsStart += 1 }  // ends at the last, not blank
        return authorization[credentialsStart..<end]
    }

    private static let scheme: [UInt8] = Array("bearer".utf8)

    private static func isBlank(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t")
    }

    static var missing: Problem { unauthorized("This API needs 'Authorization: Bearer <token>'.", challenge: #"Bearer realm="topchrome""#) }
    static var invalid: Problem { unauthorized("The bearer token is not valid.", challenge: #"Bearer realm="topchrome", error="invalid_token""#) }

    /// Compares in time that depends only on the secret's length, so the
    /// answer's timing does not tell how much of a guess was right.
    func matches(_ candidate: ArraySlice<UInt8>) -> Bool {
        // A candidate of another length is compared with the secret itself.
        let sameLength = candidate.count == secret.count
        var difference: UInt8 = sameLength ? 0 : 1
        for (mine, theirs) in zip(secret, sameLength ? candidate : secret[...]) { difference |= mine ^ theirs }
        return difference == 0
    }

    private static func unauthorized(_ detail: String, challenge: String) -> Problem {
        Problem(status: 401, detail: detail, headers: [("WWW-Authenticate", challenge)])
    }
}

/// The token the API checks now. A reload (SIGHUP) replaces it while
/// requests are being checked, so secrets rotate without a restart; each
/// check reads it under a lock, uncontended but for the instant of a reload.
final class CurrentBearerToken: @unchecked Sendable {
    private let lock = PthreadLock()
    private var token: BearerToken

    init(_ token: BearerToken) {
        self.token = token
    }

    var value: BearerToken {
        lock.withLock { token }
    }

    func replace(with token: BearerToken) {
        lock.withLock { self.token = token }
    }
}
