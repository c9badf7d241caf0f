import Locking
import Synchronization

/// `ASK` redirections seen, per slot. While a slot migrates, a command for
/// a key already moved runs on the importing node, and what it publishes
/// on a shard channel reaches only that node's subscribers, while the
/// channel is still served by the migrating one until the migration ends.
/// A caller that compares the count before and after its command knows it
/// may have run there (others' commands counted meanwhile only make it
/// relay what was heard anyway).
final class AskedSlots: @unchecked Sendable {
    private let lock = PthreadLock()
    // Guarded by `lock`.
    private var counts = [UInt32](repeating: 0, count: HashSlot.count)
    /// The node the last `ASK` for a slot named.
    private var importers: [Int: RedisNode] = [:]
    /// Whether any `ASK` came: until one does (a single Redis, a cluster
    /// that never migrated a slot) every count is zero, and the two reads
    /// of each change take no lock.
    private let anyNoted = Atomic<Bool>(false)

    func note(_ redirect: ClusterRedirect) {
        lock.withLock {
            counts[redirect.slot] &+= 1
            importers[redirect.slot] = redirect.node
        }
        anyNoted.store(true, ordering: .releasing)
    }

    func importer(_ slot: Int) -> RedisNode? {
        lock.withLock { importers[slot] }
    }

    func count(_ slot: Int) -> UInt32 {
        guard anyNoted.load(ordering: .acquiring) else { return 0 }
        return lock.withLock { counts[slot] }
    }
}

extension RedisClient {
    /// How many commands for `key`'s slot were redirected with `ASK` so far
    /// (wrapping): one that changes between sending a command and reading
    /// its reply says the command may have run on a node importing the slot.
    public func askRedirections(forKey key: [UInt8]) -> UInt32 {
        askRedirections(forSlot: HashSlot.of(key))
    }

    /// The same, for `slot` (`HashSlot.of` a key).
    public func askRedirections(forSlot slot: Int) -> UInt32 {
        askedSlots.count(slot)
    }

    /// Sends a command without a key to the node the last `ASK` for `key`'s
    /// slot named: a node importing the slot that lacks what a command
    /// redirected there needs (a function library) gets it there, since
    /// routing by key reaches the slot's owner. `.unavailable` if no `ASK` came.
    public func sendToImporter(ofKey key: [UInt8], _ arguments: [[UInt8]], completion: @escaping RedisCompletion) {
        guard let node = askedSlots.importer(HashSlot.of(key)) else { return completion(.failure(.unavailable)) }
        let command = Command(request: RESPRequest(arguments), slot: nil, deadline: .now + commandTimeout, reply: .plain(completion))
        dispatch(command, to: node, asking: false, redirects: 0)
    }
}
