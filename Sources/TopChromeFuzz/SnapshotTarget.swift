#if canImport(Glibc)
import Glibc
#endif
import MemorySessionStore
import SessionSnapshots
import TopChromeCore

/// `snapshot`: the state file (`--state-file`), read at start. A corrupt
/// file must be refused (the server then exits 2), never crash it or load
/// a state the server cannot live with.
///
/// Invariants: reading never crashes and is deterministic; what it accepts
/// has as many sessions as the header counts, no id twice, states a client
/// could have produced (inset 0…10000, version ≥ 1, seq ≤ 2^53 - 1); it
/// writes back and reads back the same; and restored into a store, every
/// session takes every kind of change (scroll, inset, disappear) with its
/// version growing by one per change (none at the last version), and what
/// the store then holds is written and read back: the writer never writes
/// what the next start would refuse.
enum SnapshotTarget {
    static let target = FuzzTarget(
        name: "snapshot",
        summary: "state files (--state-file) through SnapshotFile.read, write-back and restore",
        run: run)

    /// On tmpfs when there is one: the write-back syncs to disk.
    private static let folder: String = {
        let base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp"
        let folder = "\(base)/topchrome-fuzz-\(getpid())"
        mkdir(folder, 0o700)
        atexit {
            for name in ["state.jsonl", "copy.jsonl"] { unlink(SnapshotTarget.folder + "/" + name) }
            rmdir(SnapshotTarget.folder)
        }
        return folder
    }()

    /// Any tag: the file keeps none, and gives what it reads this one.
    static let tag = StateTag(bits: 0x5eed)

    static func run(_ bytes: [UInt8]) {
        let path = folder + "/state.jsonl", copy = folder + "/copy.jsonl"
        write(bytes, to: path)
        let file = SnapshotFile(path: path)
        let first = Result { () throws(SnapshotFile.Failure) in try file.read(taggedWith: tag) }
        let second = Result { () throws(SnapshotFile.Failure) in try file.read(taggedWith: tag) }
        let input = printable(bytes)
        guard case let .success(sessions) = first else {
            if case let .success(other) = second { fail("read failed once, then gave \(other.count) sessions: \(input)") }
            if case let .failure(failure) = first {
                guard case .corrupt = failure else { fail("a readable file is refused as \(failure): \(input)") }
            }
            return
        }
        guard case let .success(again) = second, again == sessions else { fail("reading twice differs: \(input)") }

        check(Set(sessions.map(\.id)).count == sessions.count, "a session appears twice: \(input)")
        for session in sessions {
            let state = session.state
            check(ChromeState.allowedInsets.contains(state.inset) && state.version >= 1
                  && state.lastAppliedSeq.map { ScrollReport.allowedSeqs.contains($0) } != false,
                  "accepted a state no client could produce: \(state) from \(input)")
        }

        // Written back, it reads back the same.
        let writer = SnapshotFile(path: copy)
        do {
            try writer.write(sessions)
            let reread = try writer.read(taggedWith: tag)
            check(reread == sessions, "state changed in a write/read round trip: \(input)")
        } catch {
            fail("cannot write back and read what was read (\(error)): \(input)")
        }

        // Restored, every session takes every kind of change.
        let store = InMemorySessionStore(capacity: max(sessions.count, 1), idleTimeout: nil, shardCount: 1, epoch: tag)
        do {
            try store.restore(sessions)
        } catch {
            fail("cannot restore \(sessions.count) sessions into a store that holds as many: \(input)")
        }
        let changes: [ChromeInput] = [
            .scroll(ScrollReport(contentOffsetY: 10_000, seq: ScrollReport.allowedSeqs.upperBound)),
            .setInset(ChromeState.allowedInsets.upperBound - 1), .disappear,
        ]
        for session in sessions {
            var version = session.state.version
            for change in changes {
                // Each change here alters the state (hides, new inset, reveals) unless it already was so.
                guard let after = store.apply([change], to: session.id) else { fail("restored session \(session.id) is missing") }
                check(after.state.version == version || after.state.version == version &+ 1,
                      "version went from \(version) to \(after.state.version): \(input)")
                version = after.state.version
            }
        }
        do {
            let changed = store.snapshot()
            try writer.write(changed)
            let reread = try writer.read(taggedWith: tag)
            check(reread == changed, "changed sessions read back differently: \(input)")
        } catch {
            fail("cannot write and read back the sessions after changes (\(error)): \(input)")
        }
    }

    static func write(_ bytes: [UInt8], to path: String) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { fail("cannot write the input to \(path)") }
        defer { close(fd) }
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            guard count > 0 else { fail("cannot write the input to \(path)") }
            written += count
        }
    }
}
