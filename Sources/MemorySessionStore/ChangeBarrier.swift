/// What a change waits for before it is answered, when every acknowledged
/// change must be on disk (`--fsync always`): the journal's flush. Set
/// once, before the store serves; a class so the store can be made
/// before the journal that reads it.
public final class ChangeBarrier: @unchecked Sendable {
    private var flush: (@Sendable () -> Void)?

    public init() {}

    /// Before any request reaches the store. Capture the journal weakly:
    /// it takes its changes from the store that holds this barrier, and a
    /// strong capture makes the three a cycle that is never freed.
    public func set(_ flush: @escaping @Sendable () -> Void) {
        self.flush = flush
    }

    @inline(__always)
    func wait() {
        flush?()
    }
}
