import TopChromeAPI

/// `request`: whole HTTP requests (see `RequestScript` for the text form)
/// through the real `SessionAPI`, checked against the model of Model.swift:
/// the status is the one the README and openapi.yaml call for (only
/// documented ones), errors are problem+json with the same status, a refused
/// request changes no session, a change is exactly the rules' change, state
/// answers match the store (ETag = version), long-polls and streams end
/// when their session does, nothing is left waiting or leaked, and no byte
/// of a body is ever routed (`FramingModel`).
enum RequestTarget {
    static let target = FuzzTarget(
        name: "request",
        summary: "HTTP requests (method, path, headers, body) through SessionAPI against a model",
        run: run)

    /// An input that starts with this line runs against the service with an auth token.
    static let authLine = Array("#auth\n".utf8)

    static func run(_ bytes: [UInt8]) {
        let guarded = bytes.starts(with: authLine)
        var world = World(guarded ? .guarded : .open)
        // The requests share a connection: once the server closes it, the rest is never read.
        for request in RequestScript.decode(guarded ? Array(bytes.dropFirst(authLine.count)) : bytes) {
            guard world.perform(request) else { break }
        }
        world.tearDown()
    }
}

/// `body`: the input is a request body, sent as JSON to every route that
/// reads one (scroll on `{s1}`, inset on `{s0}`, a new session, behaviour
/// on `{s1}` then scroll again, disappear on `{s1}`); each must accept exactly what the model accepts and change
/// the session exactly as the rules say.
enum BodyTarget {
    static let target = FuzzTarget(
        name: "body",
        summary: "one JSON body to scroll, inset, new session, behaviour and disappear, against the model",
        run: run)

    static let routes: [(String, String)] = [
        ("POST", "/v1/sessions/{s1}/scroll"),
        ("PUT", "/v1/sessions/{s0}/inset"),
        ("POST", "/v1/sessions"),
        ("PUT", "/v1/sessions/{s1}/behavior"),
        ("POST", "/v1/sessions/{s1}/scroll"),
        ("POST", "/v1/sessions/{s1}/disappear"),
    ]

    static func run(_ bytes: [UInt8]) {
        // Differential: the fast scroll-report reader against the strict one.
        check(ScrollReportReaders.agree(on: bytes), "the fast scroll-report path disagrees with the strict reader on: \(printable(bytes))")
        var world = World(.open)
        let headers = [("Host", "fuzz"), ("Content-Type", "application/json")]
        for (method, path) in routes {
            world.perform(ScriptedRequest(method: method, path: path, version: "HTTP/1.1", headers: headers, body: bytes))
        }
        world.tearDown()
    }
}
