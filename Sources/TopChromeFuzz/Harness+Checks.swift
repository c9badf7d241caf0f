import MicroHTTPD
import StrictJSON
import TopChromeCore
import TopChromeTesting

/// What every answer must hold whatever the model expects of it: its
/// headers, a problem's shape, a state's body.
extension World {
    func checkHeaders(_ response: MicroHTTPDResponse, _ context: () -> String) {
        for field in response.headers {
            let bad = (field.name + field.value).utf8.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0 }
            check(!bad, "response header \(field.name) carries CR, LF or NUL\n\(context())")
        }
    }

    func checkProblem(_ response: MicroHTTPDResponse, status: Int, resource: HTTPModel.Resource?, _ context: () -> String) {
        check(response.headers["Content-Type"] == "application/problem+json",
              "a \(status) without Content-Type application/problem+json\n\(context())")
        if let mismatch = JSONTools.problemMismatch(response.body, status: status) {
            fail("\(mismatch)\n\(context())\n\(World.describe(response))")
        }
        if status == 405, let resource {
            check(response.headers["Allow"] == resource.allowed.joined(separator: ", "),
                  "405 whose Allow is \(String(describing: response.headers["Allow"]))\n\(context())")
        }
        if status == 401 {
            check(response.headers["WWW-Authenticate"]?.hasPrefix("Bearer ") == true, "401 without a Bearer challenge\n\(context())")
        }
        if status == 503 {
            check(response.headers["Retry-After"].flatMap { Int($0) } != nil, "503 without Retry-After\n\(context())")
        }
    }

    func checkState(_ response: MicroHTTPDResponse, id: SessionID, state: ChromeState, _ context: () -> String) {
        func summary() -> String { "\(context())\n\(World.describe(response))" }
        check(response.headers["Content-Type"] == "application/json", "state without Content-Type application/json\n\(summary())")
        check(response.headers["ETag"] == "\"\(etag(state))\"", "ETag is not \(etag(state))\n\(summary())")
        guard case let .object(members)? = try? JSONReader.parse(response.body),
              Set(members.keys) == StateModel.members(of: state), StateModel.behaviorMatches(members, state),
              state.lastAppliedSeq.map({ last in
                  if case let .number(_, literal)? = members["lastSeq"] { return literal == String(last) }
                  return false
              }) ?? true,
              members["id"] == .string(id.description),
              case let .number(inset, _)? = members["inset"], inset == state.inset,
              members["isRevealed"] == .bool(state.isRevealed),
              case let .number(_, version)? = members["version"], version == String(state.version) else {
            fail("state body does not match the session \(id) \(state)\n\(summary())")
        }
    }

    static func describe(_ request: MicroHTTPDRequest, tooLarge: Bool, originalBody: [UInt8]) -> String {
        var text = "request: \(request.method) \(request.path) \(request.version)\n"
        for field in request.headers { text += "  \(field.name): \(field.value)\n" }
        text += tooLarge ? "  body: \(originalBody.count) bytes (over the limit)" : "  body: \(printable(request.body))"
        return text
    }

    static func describe(_ response: MicroHTTPDResponse) -> String {
        if response.pending != nil { return "response: later (a long-poll)" }
        var text = "response: \(response.status)\n"
        for field in response.headers { text += "  \(field.name): \(field.value)\n" }
        return text + "  body: \(printable(response.body))"
    }
}
