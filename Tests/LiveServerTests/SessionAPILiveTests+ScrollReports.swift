import Foundation
import Testing
import TopChromeTesting

/// Scroll reports: the reveal rules, out-of-order reports by `seq`, batches.
extension SessionAPILiveTests {
    @Test func scrollFollowsTheRules() throws {
        let id = try server.createSession(inset: 59)
        let client = try server.client()
        func scroll(_ body: String) throws -> [String: Any] {
            let response = try client.json("POST", "/v1/sessions/\(id)/scroll", body)
            #expect(response.status == 200, "\(response.text)")
            return try response.json
        }
        #expect(try scroll(#"{"contentOffsetY": 1.0001}"#)["isRevealed"] as? Bool == false)
        #expect(try scroll(#"{"contentOffsetY": 1}"#)["isRevealed"] as? Bool == true)
        #expect(try scroll(#"{"contentOffsetY": 200, "contentInsetTop": 59}"#)["isRevealed"] as? Bool == false)
        #expect(try scroll(#"{"contentOffsetY": 0, "axis": "horizontal"}"#)["isRevealed"] as? Bool == false)
        let top = try scroll(#"{"contentOffsetY": -59, "contentInsetTop": 59}"#)
        #expect(top["isRevealed"] as? Bool == true)
        #expect(top["version"] as? Int == 5)
    }

    @Test func staleReportsAreIgnored() throws {
        let id = try server.createSession()
        let client = try server.client()
        let down = try client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 400, "seq": 20}"#)
        #expect(try down.json["isRevealed"] as? Bool == false)
        let late = try client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 0, "seq": 19}"#)
        #expect(late.status == 200)
        #expect(try late.json["isRevealed"] as? Bool == false)
        #expect(try late.json["version"] as? Int == 2)
        let newer = try client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 0, "seq": 21}"#)
        #expect(try newer.json["isRevealed"] as? Bool == true)
    }

    @Test func batchAnswersTheStateAfterAll() throws {
        let id = try server.createSession()
        let response = try server.client().json("POST", "/v1/sessions/\(id)/scroll",
            #"[{"contentOffsetY": 500, "seq": 1}, {"contentOffsetY": 0, "seq": 3}, {"contentOffsetY": 900, "seq": 2}]"#)
        #expect(response.status == 200)
        #expect(try response.json["isRevealed"] as? Bool == true)
        #expect(try response.json["version"] as? Int == 3)
    }

    /// A stale report is accepted (200, the current state) but the answer
    /// says it was ignored: a client whose seq went backwards notices.
    @Test func staleReportsAreCountedInTheAnswer() throws {
        let id = try server.createSession()
        let client = try server.client()
        let fresh = try client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 500, "seq": 10}"#)
        #expect(fresh.status == 200)
        #expect(fresh.header("TopChrome-Stale-Reports") == nil)
        let stale = try client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 0, "seq": 5}"#)
        #expect(stale.status == 200)
        #expect(stale.header("TopChrome-Stale-Reports") == "1")
        #expect(try stale.json["isRevealed"] as? Bool == false, "ignored")
        let batch = try client.json("POST", "/v1/sessions/\(id)/scroll",
            #"[{"contentOffsetY": 600, "seq": 9}, {"contentOffsetY": 700, "seq": 11}, {"contentOffsetY": 0, "seq": 11}, {"contentOffsetY": 800}]"#)
        #expect(batch.header("TopChrome-Stale-Reports") == "2")
        let later = try client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 0, "seq": 12}"#)
        #expect(later.header("TopChrome-Stale-Reports") == nil)
        #expect(try later.json["isRevealed"] as? Bool == true)
    }

    @Test func badBatchChangesNothing() throws {
        let id = try server.createSession()
        let client = try server.client()
        let response = try client.json("POST", "/v1/sessions/\(id)/scroll",
            #"[{"contentOffsetY": 500}, {"contentOffsetY": "far"}]"#)
        try expectProblem(response, 400)
        let after = try state(id, client)
        #expect(after["isRevealed"] as? Bool == true)
        #expect(after["version"] as? Int == 1)
    }
}
