import SessionSnapshots

/// Where the memory store's sessions survive restarts: the state file, how
/// often it is written, and when its journal reaches the disk.
public struct StateFileSettings: Sendable, Equatable {
    /// Nil keeps sessions in memory only.
    public var path: String?
    /// Seconds between snapshots to the state file (besides the one at shutdown).
    public var snapshotInterval = 60
    /// When the journal beside the state file is synced (Redis's `appendfsync`).
    public var fsync = FsyncPolicy.everysec
    /// A journal past this many bytes (or past twice the snapshot) starts a
    /// snapshot before its interval, as Redis's `auto-aof-rewrite-min-size`.
    /// Not an option: the default suits; tests lower it.
    public var journalSnapshotBytes = 64 << 20

    static let options: [ServiceConfiguration.Option] = [
        .init(name: "state-file", placeholder: "PATH", help: "Keep sessions across restarts in PATH (written atomically).") { value, source, config throws(ServiceConfiguration.UsageError) in
            guard !value.isEmpty else { throw .init(description: "\(source) must not be empty") }
            config.stateFile.path = value
        },
        .number("snapshot-interval", "S", help: "Seconds between state-file snapshots (default {default}).", \.stateFile.snapshotInterval, in: 1...86_400),
        .init(name: "fsync", placeholder: "P", help: "When the state file's journal is synced to disk: everysec (a crash loses at most the last second), always (before each change is answered: nothing acknowledged is lost), no (the kernel decides) (default {default}).", default: { $0.stateFile.fsync.rawValue }) { value, source, config throws(ServiceConfiguration.UsageError) in
            guard let policy = FsyncPolicy(rawValue: value) else {
                throw .init(description: "\(source) must be everysec, always or no, not '\(value)'")
            }
            config.stateFile.fsync = policy
        },
    ]

    /// With the memory store, the state file's options do nothing without a state file.
    func check(_ given: [String: String]) throws(ServiceConfiguration.UsageError) {
        guard given["state-file"] == nil else { return }
        if let source = given["snapshot-interval"] {
            throw .init(description: "\(source) sets how often the state file is written and does nothing without one; add --state-file PATH, or remove it")
        }
        if let source = given["fsync"] {
            throw .init(description: "\(source) sets when the state file's journal is synced and does nothing without one; add --state-file PATH, or remove it")
        }
    }
}
