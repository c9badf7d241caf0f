import MemorySessionStore
import TopChromeCore

extension InMemorySessionStore {
    /// The entity tags this store gives these versions.
    func tags(_ versions: UInt64...) -> Set<EntityTag> {
        Set(versions.map { EntityTag(version: $0, tag: epoch) })
    }
}
