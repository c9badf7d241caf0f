import TopChromeTesting

extension ReceivedResponse {
    /// A refusal a client answers by trying again (the store away, late, full,
    /// or a change not yet confirmed): 503, a problem with no type of its own,
    /// and `Retry-After`. Tests of transient failures ask this, not which
    /// sentence the server chose: on a loaded machine one transient cause
    /// turns into another (a timeout into a lost connection), and a list of
    /// accepted sentences meets the one it lacks.
    var isRetryableRefusal: Bool {
        status == 503 && header("Content-Type") == "application/problem+json" && header("Retry-After") != nil
            && (try? json)?["type"] as? String == "about:blank"
    }
}
