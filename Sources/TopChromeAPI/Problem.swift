import MicroHTTPD
import StrictJSON

/// An error answer in RFC 9457 form (`application/problem+json`).
///
/// `type` stays `about:blank`, so `title` is the status's own phrase and
/// `detail` says what exactly was wrong with this request.
struct Problem: Error, Equatable {
    let status: Int
    let detail: String
    var headers: [(String, String)] = []
    /// A kind a client may act on apart from its status; `about:blank`
    /// (the status says it all) for the rest.
    var type = "about:blank"
    /// The kind's summary, for a `type` other than `about:blank`.
    var title: String?

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
            object.member("type") { $0.string(type) }
            object.member("title") { $0.string(title ?? Self.title(for: status)) }
            object.member("status") { $0.number(status) }
            object.member("detail") { $0.string(detail) }
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
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 503: "Service Unavailable"
        default: "Error"
        }
    }
}
