import MicroHTTPD
import StrictJSON

/// An error answer in RFC 9457 form (`application/problem+json`).
///
/// `type` is `about:blank`, so `title` is the status's own phrase, but for
/// the few problems a client acts on by kind (see ``Kind``); `detail` says
/// what exactly was wrong with this request.
struct Problem: Error, Equatable {
    let status: Int
    let detail: String
    var headers: [(String, String)] = []
    var kind: Kind?

    /// A problem type of its own, with its title and members.
    enum Kind: Equatable {
        /// draft-ietf-httpapi-ratelimit-headers-11 §5.1: requests beyond a
        /// quota policy, named in `violated-policies`.
        case quotaExceeded(policy: String)
        /// A change the store could not give a deadline: a fault of its
        /// configuration (a Redis user without `+time`), which an operator
        /// must fix, told apart from an outage.
        case deadlineUnknown
        /// RFC 6750's `invalid_token`: expired, badly signed, unknown key,
        /// not yet valid; the client gets a new token and tries again.
        case invalidToken
        /// RFC 6750's `insufficient_scope`: another session, or reading
        /// only; a new token of the same grant will not help.
        case insufficientScope
        /// A body over the server's limit, which it names (`maxBodyBytes`),
        /// so a client can send what it holds again in parts that fit.
        case contentTooLarge(limit: Int)
    }

    static func == (a: Problem, b: Problem) -> Bool {
        a.status == b.status && a.detail == b.detail
    }

    static func badRequest(_ detail: String) -> Problem { Problem(status: 400, detail: detail) }
    static func notFound(_ detail: String) -> Problem { Problem(status: 404, detail: detail) }

    static func methodNotAllowed(_ method: String, allowed: [String]) -> Problem {
        let list = allowed.joined(separator: ", ")
        return Problem(status: 405, detail: "\(method.prefix(32)) is not allowed here; use \(list)",
                       headers: [("Allow", list)])
    }

    var response: CompleteResponse {
        var json = JSONWriter()
        json.object { object in
            switch kind {
            case nil:
                object.member("type") { $0.string("about:blank") }
                object.member("title") { $0.string(Self.title(for: status)) }
            case .quotaExceeded:
                object.member("type") { $0.string("https://iana.org/assignments/http-problem-types#quota-exceeded") }
                object.member("title") { $0.string("Request cannot be satisfied as assigned quota has been exceeded") }
            case .deadlineUnknown:
                object.member("type") { $0.string("urn:topchrome:problem:deadline-unknown") }
                object.member("title") { $0.string("Change deadline unknown") }
            case .invalidToken:
                object.member("type") { $0.string("urn:topchrome:problem:invalid-token") }
                object.member("title") { $0.string("Invalid token") }
            case .insufficientScope:
                object.member("type") { $0.string("urn:topchrome:problem:insufficient-scope") }
                object.member("title") { $0.string("Insufficient scope") }
            case .contentTooLarge:
                object.member("type") { $0.string("urn:topchrome:problem:content-too-large") }
                object.member("title") { $0.string(Self.title(for: status)) }
            }
            object.member("status") { $0.number(status) }
            object.member("detail") { $0.string(detail) }
            if case let .contentTooLarge(limit) = kind {
                object.member("maxBodyBytes") { $0.number(limit) }
            }
            if case let .quotaExceeded(policy) = kind {
                object.member("violated-policies") { array in
                    array.raw("[")
                    array.string(policy)
                    array.raw("]")
                }
            }
        }
        var headers = HTTPHeaders([("Content-Type", "application/problem+json")])
        for (name, value) in self.headers { headers.add(name: name, value: value) }
        return CompleteResponse(status: status, headers: headers, body: json.bytes)
    }

    static func title(for status: Int) -> String {
        switch status {
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 412: "Precondition Failed"
        case 413: "Content Too Large"
        case 415: "Unsupported Media Type"
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 503: "Service Unavailable"
        default: "Error"
        }
    }
}
