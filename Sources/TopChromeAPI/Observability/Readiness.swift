import MicroHTTPD
import StrictJSON
import TopChromeCore

/// `/readyz`: whether a load balancer should send this instance traffic,
/// and, for whoever may know, why not.
///
/// Why is for operators only: a Redis address, Redis's raw errors (an
/// `AUTH` refusal among them) and a state file's path tell an outsider
/// about the deployment. With a bearer token, only a request that carries
/// it hears them; anyone else gets the status alone, which is all a load
/// balancer needs.
struct Readiness: Sendable {
    /// Whether the store can serve now (a store in this process always can).
    let store: @Sendable () -> StoreReadiness
    /// What `degraded` names when it goes wrong (e.g. the state file).
    let details: [any ReadinessDetail]
    let authToken: CurrentBearerToken?

    func answer(isReady: Bool, authorization: String?) throws(Problem) -> MicroHTTPDResponse {
        guard isReady else { throw SessionAPI.shuttingDown }
        let mayTell = authToken.map { token in (try? token.value.check(authorization)) != nil } ?? true
        if case let .unavailable(reason) = store() {
            throw Problem(status: 503, detail: "The session store cannot be reached" + (mayTell ? ": \(reason)" : "."),
                          headers: [("Retry-After", "1")])
        }
        let problems = mayTell ? details.compactMap { detail in detail.problem().map { (detail.name, $0) } } : []
        var json = JSONWriter()
        json.object { object in
            object.member("status") { $0.string("ready") }
            if !problems.isEmpty {
                object.member("degraded") { value in
                    value.object { degraded in
                        for (name, problem) in problems { degraded.member(name) { $0.string(problem) } }
                    }
                }
            }
        }
        return MicroHTTPDResponse(status: 200, headers: HTTPHeaders([("Content-Type", "application/json")]), body: json.bytes)
    }
}
