#if canImport(Glibc)
import Glibc
#endif

/// How many connections and watchers the process's descriptors allow.
///
/// Every connection holds a descriptor, and the process needs others that
/// no connection count shows: the listening socket, libmicrohttpd's epoll
/// and signalling descriptors per thread, Redis connections, the state file
/// and its temporary, `/proc` reads for `/metrics`, and the Swift runtime's
/// own — libdispatch's worker-pool monitor opens `/proc/<tid>/stat` and
/// traps (SIGILL) when it cannot. So connections stop short of the limit by
/// a reserve that is never lent to clients, and a client past the budget
/// is refused rather than the process crashing.
struct DescriptorBudget: Equatable {
    /// The soft `nofile` limit, after raising it.
    let limit: Int
    /// Connections at most.
    let connections: Int
    /// Watchers at most: fewer than connections, so that with every watcher
    /// open there are still connections for scroll reports and health checks.
    let watchers: Int

    /// Descriptors kept from clients: a base for the process, a few per
    /// libmicrohttpd thread, and with a Redis store room for its connections
    /// (one per lane and a subscriber per node, for a cluster's nodes too).
    static func reserve(threads: Int, redisConnections: Int?) -> Int {
        64 + 4 * threads + (redisConnections.map { 64 + 16 * $0 } ?? 0)
    }

    init(limit: Int, reserve: Int) {
        self.limit = limit
        connections = max(1, limit - reserve)
        watchers = max(1, connections - max(connections / 8, 1))
    }

    /// Raises the soft `nofile` limit to the hard one (as nginx's
    /// `worker_rlimit_nofile` and Go's runtime do; no privilege needed) and
    /// returns the soft limit then in force.
    static func raiseDescriptorLimit() -> Int {
        var limits = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limits) == 0 else { return 1024 }
        if limits.rlim_cur < limits.rlim_max {
            var raised = limits
            raised.rlim_cur = limits.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limits = raised }
        }
        return Int(clamping: min(limits.rlim_cur, rlim_t(Int32.max)))  // RLIM_INFINITY is all ones
    }
}
