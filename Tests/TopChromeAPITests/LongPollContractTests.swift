import ContractTestSupport
import Testing
import TopChromeTesting

/// `Prefer: wait` with `If-None-Match`: a read that waits for a change,
/// answered through the watcher it registers, on a store that answers at
/// once and on one that answers later.
@Suite struct LongPollContractTests {
    /// Waits in the background; the test changes the session meanwhile.
    private func waiting(_ api: ContractFixture, _ id: String, _ headers: [(String, String)]) -> BackgroundRequest {
        let client = api.client
        return BackgroundRequest { try client.request("GET", "/v1/sessions/\(id)", headers: headers) }
    }

    @Test(arguments: StoreUnderTest.allCases)
    func wakesOnChange(_ store: StoreUnderTest) throws {
        let api = ContractFixture(store)
        let id = try api.createSession()
        let poll = waiting(api, id, [("If-None-Match", try api.etag(id)), ("Prefer", "wait=30")])
        #expect(eventually { api.api.watcherCount == 1 })
        try api.client.json("POST", "/v1/sessions/\(id)/scroll", #"{"contentOffsetY": 500}"#)
        let response = try poll.value
        #expect(response.status == 200)
        #expect(response.etagVersion == 2)
        #expect(response.header("Preference-Applied") == "wait=30")
        #expect(try response.json["isRevealed"] as? Bool == false)
        #expect(eventually { api.api.watcherCount == 0 })
    }

    /// Times out with 304 naming the current state; a change to a state the
    /// client also named does not end the wait. Every accepted spelling of
    /// the preference, and more seconds than an Int holds, is a wait capped
    /// at the longest allowed.
    @Test(arguments: StoreUnderTest.allCases)
    func timesOutWith304AtTheCap(_ store: StoreUnderTest) throws {
        let api = ContractFixture(store, maxWaitSeconds: 1)
        let id = try api.createSession()
        let epoch = String(decoding: api.memory.epoch.hex, as: UTF8.self)
        let polls = ["wait=1", "WAIT = 1", "wait=\"1\"", "respond-async, wait=1; x=y", "wait=600", "wait=99999999999999999999"].map {
            waiting(api, id, [("If-None-Match", "\"1.\(epoch)\", \"2.\(epoch)\""), ("Prefer", $0)])
        }
        #expect(eventually { api.api.watcherCount == polls.count })
        try api.client.json("PUT", "/v1/sessions/\(id)/inset", #"{"inset": 3}"#)
        for poll in polls {
            let response = try poll.value
            #expect(response.status == 304)
            #expect(response.etagVersion == 2)
            #expect(response.header("Preference-Applied") == "wait=1")
        }
        #expect(eventually { api.api.watcherCount == 0 })
    }

    @Test(arguments: StoreUnderTest.allCases)
    func answersAtOnceWhenAlreadyChanged(_ store: StoreUnderTest) throws {
        let api = ContractFixture(store)
        let id = try api.createSession()
        let etag = try api.etag(id)
        try api.client.json("PUT", "/v1/sessions/\(id)/inset", #"{"inset": 10}"#)
        let response = try api.client.request("GET", "/v1/sessions/\(id)", headers: [("If-None-Match", etag), ("Prefer", "wait=30")])
        #expect(response.status == 200)
        #expect(response.etagVersion == 2)
        #expect(response.header("Preference-Applied") == nil, "no wait happened")
        // A store that answers later lets its watcher go on its own thread, after the answer.
        #expect(eventually { api.api.watcherCount == 0 })
    }

    @Test(arguments: StoreUnderTest.allCases)
    func deletedSessionIs404(_ store: StoreUnderTest) throws {
        let api = ContractFixture(store)
        let id = try api.createSession()
        let poll = waiting(api, id, [("If-None-Match", try api.etag(id)), ("Prefer", "wait=30")])
        #expect(eventually { api.api.watcherCount == 1 })
        try api.client.request("DELETE", "/v1/sessions/\(id)")
        try expectProblem(try poll.value, 404)
        try expectProblem(try api.client.request("GET", "/v1/sessions/\(id)", headers: [("If-None-Match", "*"), ("Prefer", "wait=1")]), 404)
    }
}
