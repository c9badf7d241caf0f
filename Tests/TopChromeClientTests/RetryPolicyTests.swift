import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import TopChromeClient

/// Backoff with full jitter, its cap, and the service's Retry-After.
struct RetryPolicyTests {
    let policy = RetryPolicy(initialDelay: 0.25, maximumDelay: 4, maximumAttempts: 8, maximumRetryAfter: 60)

    @Test func fullJitterUpToADoublingCap() {
        #expect(policy.delay(retry: 0, retryAfter: nil, random: 0) == 0)
        #expect(policy.delay(retry: 0, retryAfter: nil, random: 0.5) == 0.125)
        #expect(policy.delay(retry: 2, retryAfter: nil, random: 0.5) == 0.5)
        #expect(policy.delay(retry: 5, retryAfter: nil, random: 0.5) == 2, "capped at maximumDelay")
        #expect(policy.delay(retry: 500, retryAfter: nil, random: 0.999) < 4)
    }

    @Test func retryAfterIsTheLeastWaitUpToItsCap() {
        #expect(policy.delay(retry: 0, retryAfter: 3, random: 0.5) == 3)
        #expect(policy.delay(retry: 5, retryAfter: 1, random: 0.9) == 3.6, "a longer backoff stays")
        #expect(policy.delay(retry: 0, retryAfter: 3600, random: 0.5) == 60)
    }

    @Test func retryAfterInBothForms() {
        #expect(ChromeService.seconds(retryAfter: "30") == 30)
        #expect(ChromeService.seconds(retryAfter: " 0 ") == 0)
        #expect(ChromeService.seconds(retryAfter: "-1") == nil)
        #expect(ChromeService.seconds(retryAfter: "soon") == nil)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let later = ChromeService.seconds(retryAfter: formatter.string(from: Date().addingTimeInterval(120)))
        #expect((100...120).contains(later ?? -1))
        #expect(ChromeService.seconds(retryAfter: "Sun, 06 Nov 1994 08:49:37 GMT") == 0, "a date past means now")
    }

    @Test func whatIsRetried() {
        func retried(_ status: Int) -> Bool {
            if case .retryable = ChromeService.classify(status: status, body: Data(), sessionID: "s", retryAfter: nil) { return true }
            return false
        }
        #expect(retried(503) && retried(429))
        #expect(!retried(400) && !retried(401) && !retried(404) && !retried(412) && !retried(415))
        guard case let .retryable(_, after) = ChromeService.classify(status: 503, body: Data(), sessionID: nil, retryAfter: "7") else {
            Issue.record("503 not retryable")
            return
        }
        #expect(after == 7)
    }
}

/// What a reconnection of the event stream asks for.
struct EventStreamRequestTests {
    @Test func reconnectionNamesTheLastEvent() async throws {
        let client = ChromeService(baseURL: URL(string: "http://127.0.0.1:9")!, bearerToken: "secret")
        let follower = StateFollower(session: client.session(id: "abc"))
        let first = try await follower.request(lastEventID: "")
        #expect(first.url?.absoluteString == "http://127.0.0.1:9/v1/sessions/abc/events")
        #expect(first.value(forHTTPHeaderField: "Accept") == "text/event-stream")
        #expect(first.value(forHTTPHeaderField: "Authorization") == "Bearer secret")
        #expect(first.value(forHTTPHeaderField: "Last-Event-ID") == nil)
        #expect(try await follower.request(lastEventID: "7").value(forHTTPHeaderField: "Last-Event-ID") == "7")
    }
}
