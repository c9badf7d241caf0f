import Foundation
import TopChromeApp

/// A real TopChrome server on a free loopback port, stopped when released.
final class LiveServer: Sendable {
    let service: TopChromeService
    var port: Int { service.port }

    init(_ configure: (inout ServiceConfiguration) -> Void = { _ in }) throws {
        var configuration = ServiceConfiguration()
        configuration.port = 0
        configuration.threads = 2
        configure(&configuration)
        service = TopChromeService(configuration: configuration)
        try service.start()
    }

    deinit { service.stop() }

    func client() throws -> TestHTTPClient {
        try TestHTTPClient(port: port)
    }

    /// Creates a session and returns its id.
    func createSession(inset: Double? = nil) throws -> String {
        let response = try client().json("POST", "/v1/sessions", inset.map { #"{"inset":\#($0)}"# } ?? "")
        guard response.status == 201, let id = try response.json["id"] as? String else {
            throw TestClientError.malformed(response.text)
        }
        return id
    }
}

/// The package's top folder, for files the server must serve as they are.
let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// Polls `condition` for up to `seconds`: the server frees resources and
/// closes connections asynchronously.
func eventually(within seconds: Double = 5, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        usleep(20_000)
    }
    return condition()
}
