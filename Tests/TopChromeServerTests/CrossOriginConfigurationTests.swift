import Testing
@testable import TopChromeServer

/// `--cors-origin`: repeatable, a list in its variable, and only origins a
/// browser could send.
@Suite struct CrossOriginConfigurationTests {
    func origins(_ arguments: [String], _ environment: [String: String] = [:]) throws -> [String] {
        guard case let .serve(configuration) = try ServiceConfiguration.parse(arguments: arguments, environment: environment) else {
            throw ServiceConfiguration.UsageError(description: "not a serve command")
        }
        return configuration.http.corsOrigins
    }

    func refusal(_ value: String) -> String? {
        do {
            _ = try origins(["--cors-origin", value])
            return nil
        } catch {
            return (error as? ServiceConfiguration.UsageError)?.description
        }
    }

    @Test func noneByDefault() throws {
        #expect(try origins([]).isEmpty)
    }

    @Test func theFlagRepeatsAndTheVariableHoldsAList() throws {
        #expect(try origins(["--cors-origin", "https://app.example.com", "--cors-origin=http://127.0.0.1:5173",
                             "--cors-origin", "https://app.example.com"])
            == ["https://app.example.com", "http://127.0.0.1:5173"], "in order, each once")
        #expect(try origins([], ["TOPCHROME_CORS_ORIGIN": "https://a.example, http://[::1]:8000 http://localhost:3000"])
            == ["https://a.example", "http://[::1]:8000", "http://localhost:3000"])
        #expect(try origins(["--cors-origin", "https://b.example"], ["TOPCHROME_CORS_ORIGIN": "https://a.example"])
            == ["https://b.example"], "flags win over the variable, as for every option")
    }

    @Test(arguments: [
        ("*", "would let every web page call this API"),
        ("null", "is the origin of sandboxed frames and local files"),
        ("https://app.example.com/", "has a path, query or fragment; an origin ends after the host and port: https://app.example.com"),
        ("https://app.example.com/v1", "has a path"),
        ("https://App.Example.com", "must be written in lower case, as browsers send it: https://app.example.com"),
        ("HTTPS://app.example.com", "must be written in lower case"),
        ("https://app.example.com:443", "names the scheme's default port, which browsers leave out: https://app.example.com"),
        ("http://127.0.0.1:80", "names the scheme's default port"),
        ("app.example.com", "must be an origin as browsers send it"),
        ("ftp://files.example.com", "must be an origin as browsers send it"),
        ("https://", "must be an origin"),
        ("https://user@app.example.com", "must be an origin"),
        ("https://app.example.com:0", "must be an origin"),
        ("https://app.example.com:65536", "must be an origin"),
        ("https://app.example.com:+80", "must be an origin"),
        ("https://app.example.com:08080", "must be an origin"),
        ("https://[::1", "must be an origin"),
        ("https://exämple.com", "must be an origin"),
    ])
    func originsABrowserNeverSendsAreRefused(_ value: String, _ message: String) {
        let description = refusal(value)
        #expect(description?.hasPrefix("--cors-origin: '\(value)' ") == true, "\(description ?? "accepted")")
        #expect(description?.contains(message) == true, "\(description ?? "accepted")")
    }

    @Test func anEmptyListIsRefused() {
        #expect(throws: ServiceConfiguration.UsageError(description: "TOPCHROME_CORS_ORIGIN must name an origin, as in https://app.example.com")) {
            try origins([], ["TOPCHROME_CORS_ORIGIN": " , "])
        }
        #expect(refusal("")?.hasPrefix("--cors-origin must name an origin") == true)
    }

    @Test func aBadOriginInTheVariableNamesIt() {
        #expect(throws: ServiceConfiguration.UsageError.self) {
            try origins([], ["TOPCHROME_CORS_ORIGIN": "https://a.example,https://b.example/"])
        }
    }
}
