import Locking
import Redis

/// Redis's error replies, by their code (the reply's first word): counted
/// for `/metrics`, and told in the log when a kind starts, at most once a
/// minute while it lasts, and when it stops. A fault that fails every
/// request (a library gone that the user may not load, a permission
/// missing, a full Redis) must not look healthy; a label per code Redis
/// may invent must not grow the metrics without bound, so codes outside
/// `codes` count as `other`.
final class RedisErrorReplies: @unchecked Sendable {
    static let codes = ["ERR", "NOPERM", "OOM", "NOREPLICAS", "READONLY", "MISCONF", "LOADING", "BUSY", "MASTERDOWN",
                        "CLUSTERDOWN", "TRYAGAIN", "MOVED", "ASK", "CROSSSLOT", "WRONGTYPE", "NOSCRIPT", "NOAUTH",
                        "WRONGPASS", "EXECABORT", "other"]
    /// Redirections, counted but not logged: a cluster moving slots sends them by design.
    static let routine: Set<String> = ["MOVED", "ASK"]
    /// Redis's words (code `ERR`) for a command a function ran that the
    /// caller's ACL refuses: a permission missing, as `NOPERM` is.
    static let scriptRefusal = "can't run this command"
    /// A kind not met for this long has stopped.
    static let quiet: Duration = .seconds(10)
    /// While a kind lasts, one line per this long at most.
    static let reminder: Duration = .seconds(60)

    private struct Episode {
        var since: ContinuousClock.Instant
        var lastSeen: ContinuousClock.Instant
        var lastLogged: ContinuousClock.Instant
        /// Replies since the episode began, and since its last line.
        var count = 1
        var unlogged = 0
    }

    private let lock = PthreadLock()
    // Guarded by `lock`.
    private var counts = [Int](repeating: 0, count: RedisErrorReplies.codes.count)
    private var episodes: [Int: Episode] = [:]
    private let logger: Logger
    /// A refusal that may fail every change came (`NOPERM`, a library
    /// missing): the store should check whether changes can succeed.
    private var refusalSeen = false

    init(logger: Logger) {
        self.logger = logger
    }

    static func index(of message: String) -> Int {
        let code = message.prefix { $0 != " " }
        return codes.firstIndex { $0 == code } ?? codes.count - 1
    }

    /// Counts one reply, and logs it when its kind starts or has lasted
    /// another minute.
    func record(_ node: RedisNode, _ message: String, now: ContinuousClock.Instant = .now) {
        let index = Self.index(of: message)
        let code = Self.codes[index]
        let line: (starts: Bool, count: Int)? = lock.withLock {
            counts[index] += 1
            if code == "NOPERM" || message.hasPrefix("ERR Function not found") || message.contains(Self.scriptRefusal) {
                refusalSeen = true
            }
            guard !Self.routine.contains(code) else { return nil }
            guard var episode = episodes[index] else {
                episodes[index] = Episode(since: now, lastSeen: now, lastLogged: now)
                return (true, 1)
            }
            episode.lastSeen = now
            episode.count += 1
            episode.unlogged += 1
            defer { episodes[index] = episode }
            guard now - episode.lastLogged >= Self.reminder else { return nil }
            let unlogged = episode.unlogged
            episode.lastLogged = now
            episode.unlogged = 0
            return (false, unlogged)
        }
        guard let line else { return }
        let level: LogLevel = code == "NOPERM" || code == "NOAUTH" || code == "WRONGPASS" ? .error : .warn
        logger.log(level, line.starts ? "Redis answers with errors" : "Redis still answers with errors",
                   ["code": .string(code), "node": .string(node.description), "reply": .string(String(message.prefix(200))),
                    "replies": .int(line.count)])
    }

    /// Ends the kinds not met for `quiet`, each with a line.
    func sweep(now: ContinuousClock.Instant = .now) {
        let ended: [(String, Episode)] = lock.withLock {
            let gone = episodes.filter { now - $0.value.lastSeen >= Self.quiet }
            for index in gone.keys { episodes[index] = nil }
            return gone.map { (Self.codes[$0.key], $0.value) }
        }
        for (code, episode) in ended {
            logger.log(.info, "Redis no longer answers with errors",
                       ["code": .string(code), "replies": .int(episode.count)])
        }
    }

    /// Whether a refusal that may fail every change came since last asked.
    func takeRefusalSeen() -> Bool {
        lock.withLock {
            defer { refusalSeen = false }
            return refusalSeen
        }
    }

    /// Replies counted so far, by code, in `codes`' order.
    var totals: [Int] { lock.withLock { counts } }
}
