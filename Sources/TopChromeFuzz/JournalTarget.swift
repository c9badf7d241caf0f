#if canImport(Glibc)
import Glibc
#endif
import SessionSnapshots
import TopChromeCore

/// `journal`: the journal beside the state file, read at start after the
/// snapshot. A torn last record is dropped; any other damage refused;
/// never a crash.
///
/// Invariants: reading is deterministic; the lenient reader of
/// `topchrome state-file check`/`repair` agrees with the start's — no
/// finding where the start reads the file, the same sessions and the same
/// torn record, and at least one finding where the start refuses it; what
/// the repair keeps is written and read back the same.
enum JournalTarget {
    static let target = FuzzTarget(
        name: "journal",
        summary: "state-file journals through the start's reader and state-file check/repair's",
        run: run)

    private static let folder: String = {
        let base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp"
        let folder = "\(base)/topchrome-fuzz-journal-\(getpid())"
        mkdir(folder, 0o700)
        atexit {
            for name in ["state.jsonl", "state.jsonl.journal-0", "copy.jsonl"] { unlink(JournalTarget.folder + "/" + name) }
            rmdir(JournalTarget.folder)
        }
        return folder
    }()

    static let tag = StateTag(bits: 0x5eed)

    static func run(_ bytes: [UInt8]) {
        let file = SnapshotFile(path: folder + "/state.jsonl")
        unlink(file.path)
        SnapshotTarget.write(bytes, to: file.path + ".journal-0")
        let input = printable(bytes)
        let first = Result { () throws(SnapshotFile.Failure) in try StateFileRecovery.read(file, taggedWith: tag) }
        let second = Result { () throws(SnapshotFile.Failure) in try StateFileRecovery.read(file, taggedWith: tag) }
        let scan = StateFileScan(file, taggedWith: tag)
        switch (first, second) {
        case let (.success(recovery), .success(again)):
            check(Set(recovery.sessions) == Set(again.sessions), "reading twice differs: \(input)")
            check(scan.findings.isEmpty, "check finds \(scan.findings) where a start reads the file: \(input)")
            check(Set(scan.sessions) == Set(recovery.sessions), "check and the start read different sessions: \(input)")
            check(scan.torn == recovery.dropped, "check and the start drop different records: \(input)")
            for session in recovery.sessions {
                check(ChromeState.allowedInsets.contains(session.state.inset) && session.state.version >= 1,
                      "accepted a state no client could produce: \(session.state) from \(input)")
            }
        case let (.failure(failure), .failure(again)):
            check(failure == again, "reading twice fails differently: \(input)")
            guard case .corrupt = failure else { fail("a readable journal is refused as \(failure): \(input)") }
            check(!scan.findings.isEmpty, "check finds nothing where a start refuses the file (\(failure)): \(input)")
        default:
            fail("reading twice differs: \(input)")
        }
        // What a repair keeps is written and read back the same.
        let copy = SnapshotFile(path: folder + "/copy.jsonl")
        do {
            try copy.write(scan.sessions)
            let reread = try copy.read(taggedWith: tag)
            check(Set(reread) == Set(scan.sessions), "the kept sessions read back differently: \(input)")
        } catch {
            fail("cannot write back what check read (\(error)): \(input)")
        }
    }
}
