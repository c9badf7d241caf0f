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
    func check(_ authorization: String?) throws(Problem) {
        guard let authorization else { throw Self.missing }
        guard let credentials = Self.credentials(in: authorization), matches(credentials) else { throw Self.invalid }
    }

    /// The credentials of `Bearer <credentials>`, or nil for another scheme or none.
    static func credentials(in authorization: String) -> ArraySlice<UInt8>? {
        var field = Array(authorization.utf8)[...]
        while let last = field.last, last == UInt8(ascii: " ") || last == UInt8(ascii: "\t") { field.removeLast() }
        while let first = field.first, first == UInt8(ascii: " ") || first == UInt8(ascii: "\t") { field.removeFirst() }
        let scheme = field.prefix { $0 != UInt8(ascii: " ") }
        let credentials = field.dropFirst(scheme.count).drop { $0 == UInt8(ascii: " ") }
        guard scheme.count == 6, zip(scheme, "bearer".utf8).allSatisfy({ $0 | 0x20 == $1 }),
              credentials.startIndex > scheme.endIndex else {
            return nil
        }
        return credentials
    }

    static var missing: Problem { unauthorized("This API needs 'Authorization: Bearer <token>'.", challenge: #"Bearer realm="topchrome""#) }
    static var invalid: Problem { unauthorized("The bearer token is not valid.", challenge: #"Bearer realm="topchrome", error="invalid_token""#) }

    /// Compares in time that depends only on the secret's length, so the
    /// answer's timing does not tell how much of a guess was right.
    func matches(_ candidate: ArraySlice<UInt8>) -> Bool {
        var difference: UInt8 = candidate.count == secret.count ? 0 : 1
        let start = candidate.startIndex
        for index in secret.indices {
            difference |= secret[index] ^ (index < candidate.count ? candidate[start + index] : 0)
        }
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
