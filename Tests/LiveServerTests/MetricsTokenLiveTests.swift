import Foundation
import Testing
import TopChromeTesting

/// `--metrics-token-file`: `/metrics` tells what `/readyz` keeps to
/// operators, so with a scraper's token it answers that token (or the
/// API's own) and nobody else; the scraper's token opens nothing else.
@Suite struct MetricsTokenLiveTests {
    static let scraper = "scraper-token-0123456789abcdef0123"
    static let operatorToken = "operator-token-0123456789abcdef012"

    func metrics(_ server: LiveServer, token: String?) throws -> ReceivedResponse {
        try server.client().request("GET", "/metrics", headers: token.map { [("Authorization", "Bearer \($0)")] } ?? [])
    }

    @Test func metricsAnswerTheScrapersTokenOrTheAPIsOnly() throws {
        let server = try LiveServer { configuration in
            configuration.auth.metricsToken = Self.scraper
            configuration.auth.token = Self.operatorToken
        }
        for token in [nil, "wrong", "scraper-token"] {
            let refused = try metrics(server, token: token)
            #expect(refused.status == 401)
            #expect(refused.header("Content-Type") == "application/problem+json")
            #expect(refused.header("WWW-Authenticate")?.hasPrefix("Bearer ") == true)
            #expect(!refused.text.contains("topchrome_"), "no metric leaks into the refusal")
        }
        for token in [Self.scraper, Self.operatorToken] {
            let answered = try metrics(server, token: token)
            #expect(answered.status == 200)
            #expect(answered.text.contains("topchrome_sessions") || answered.text.contains("topchrome_watchers"))
        }
        let created = try server.client().request("POST", "/v1/sessions", headers: [("Authorization", "Bearer \(Self.scraper)")])
        #expect(created.status == 401, "the scraper's token does not open the API")
    }

    /// Without the option `/metrics` stays open, as before, even with an API token.
    @Test func withoutAMetricsTokenMetricsStayOpen() throws {
        let server = try LiveServer { $0.auth.token = Self.operatorToken }
        #expect(try metrics(server, token: nil).status == 200)
    }
}
