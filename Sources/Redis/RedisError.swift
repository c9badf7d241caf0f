/// Why a command got no reply from Redis. Each case maps to one answer of
/// the caller's (a 503 with `Retry-After` for all of them in a web service);
/// none of them means the command certainly did not run, except `.unavailable`.
public enum RedisError: Error, Sendable, Hashable {
    /// The deadline passed before the reply came. The command may still run.
    case timeout
    /// The connection dropped while the command was in flight: it may or may
    /// not have run.
    case connectionLost
    /// There is no connection to the node right now (it is being re-established,
    /// or the client is closed); the command was not sent.
    case unavailable
    /// `TRYAGAIN`: a multi-key command met a slot being migrated.
    case tryAgain(String)
    /// `CLUSTERDOWN`: the cluster cannot serve the slot at the moment.
    case clusterDown(String)
    /// The cluster kept redirecting the command; its topology is in flux.
    case tooManyRedirects
}
