import SessionSnapshots

/// `topchrome state-file check PATH` and `topchrome state-file repair PATH`,
/// as `redis-check-aof` is for an AOF: what is wrong where, and a mended
/// file that keeps every session that can be read. Run with the server
/// stopped: a repair replaces the state file.
public struct StateFileCommand: Sendable {
    public static let usage = "topchrome: usage: topchrome state-file check PATH | topchrome state-file repair PATH"

    /// For stdout.
    public var output: [String] = []
    /// For stderr: what is wrong, or why the repair failed.
    public var problems: [String] = []
    /// 0: a start would read it (check), or it is mended (repair); 2: it
    /// is damaged (check) or could not be mended (repair).
    public var exitStatus: Int32 = 0

    /// Nil for arguments that are neither form.
    public init?(arguments: [String]) {
        guard arguments.count == 2, let action = arguments.first, ["check", "repair"].contains(action), !arguments[1].isEmpty else {
            return nil
        }
        let scan = StateFileScan(SnapshotFile(path: arguments[1]))
        action == "check" ? check(scan) : repair(scan)
    }

    private mutating func check(_ scan: StateFileScan) {
        let path = scan.file.path
        for finding in scan.findings { problems.append("damaged: \(finding)") }
        for torn in scan.torn { output.append("warning: \(torn); a start drops it too") }
        guard scan.findings.isEmpty else {
            problems.append("'\(path)' would stop a start; `topchrome state-file repair \(path)` keeps every readable session")
            exitStatus = 2
            return
        }
        let journals = scan.journals.isEmpty ? "no journal" : "journal\(scan.journals.count == 1 ? "" : "s") \(scan.journals.map(String.init).joined(separator: ", ")) (\(scan.records) records)"
        output.append("ok: '\(path)': \(scan.fromSnapshot) sessions in the snapshot\(scan.snapshotExists ? "" : " (none yet)"), \(journals); \(scan.sessions.count) sessions after them")
    }

    private mutating func repair(_ scan: StateFileScan) {
        let path = scan.file.path
        guard !scan.findings.isEmpty || !scan.torn.isEmpty else {
            output.append("'\(path)' needs no repair: \(scan.sessions.count) sessions read")
            return
        }
        for finding in scan.findings { output.append("dropped: \(finding)") }
        for torn in scan.torn { output.append("dropped: \(torn)") }
        do {
            let kept = try scan.repair()
            output.append("wrote '\(path)' with \(scan.sessions.count) sessions; the old files are kept as \(kept.map { "'\($0)'" }.joined(separator: ", "))")
        } catch {
            problems.append("could not repair: \(error)")
            exitStatus = 2
        }
    }
}
