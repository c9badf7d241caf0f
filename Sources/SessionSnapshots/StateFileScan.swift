#if canImport(Glibc)
import Glibc
#endif
import TopChromeCore

/// `topchrome state-file check` and `repair`, as `redis-check-aof`: a
/// reading of the state file and its journals that goes on past damage,
/// naming every line it could not read, and keeping every session it could.
public struct StateFileScan: Sendable {
    /// A line that is not what it should be, where it is.
    public struct Finding: Sendable, Equatable, CustomStringConvertible {
        public var path: String
        public var line: Int
        public var byte: Int
        public var reason: String

        public var description: String { "'\(path)' line \(line), byte \(byte): \(reason)" }
    }

    public let file: SnapshotFile
    /// Every session read, with the journals' records applied in order.
    public private(set) var sessions: [Session] = []
    /// What stops a start; a repair drops these lines.
    public private(set) var findings: [Finding] = []
    /// Torn last records: a start drops them with a warning.
    public private(set) var torn: [JournalFiles.TornRecord] = []
    /// The journals read, after the snapshot.
    public private(set) var journals: [UInt64] = []
    public private(set) var fromSnapshot = 0
    /// Records read from the journals.
    public private(set) var records = 0
    /// Whether a snapshot file was there.
    public private(set) var snapshotExists = false

    /// Reads everything readable. Never throws: what it cannot read is a finding.
    public init(_ file: SnapshotFile, taggedWith tag: StateTag = StateTag(bits: 0)) {
        self.file = file
        var states: [SessionID: ChromeState] = [:]
        var order: [SessionID] = []
        var journalNumber: UInt64 = 0
        do throws(SnapshotFile.Failure) {
            if let bytes = try SnapshotFile.readAll(file.path) {
                snapshotExists = true
                journalNumber = readSnapshot(bytes, into: &states, order: &order, tag: tag)
            }
        } catch {
            findings.append(Finding(path: file.path, line: 0, byte: 0, reason: "\(error)"))
        }
        fromSnapshot = states.count
        let files = JournalFiles(snapshot: file)
        journals = files.numbers().filter { $0 >= journalNumber }
        for number in journals {
            readJournal(files, number, into: &states, order: &order, tag: tag)
        }
        sessions = order.compactMap { id in states[id].map { Session(id: id, state: $0, tag: tag) } }
    }

    private mutating func note(_ failure: SnapshotFile.Failure) {
        switch failure {
        case let .corrupt(path, line, byte, reason): findings.append(Finding(path: path, line: line, byte: byte, reason: reason))
        case let .unreadable(path, reason), let .unwritable(path, reason): findings.append(Finding(path: path, line: 0, byte: 0, reason: reason))
        case let .tooManySessions(path, count, limit): findings.append(Finding(path: path, line: 0, byte: 0, reason: "\(count) sessions, more than \(limit)"))
        }
    }

    /// The snapshot's sessions, line by line; returns the journal number its header names (0 if unreadable).
    private mutating func readSnapshot(_ bytes: [UInt8], into states: inout [SessionID: ChromeState], order: inout [SessionID],
                                       tag: StateTag) -> UInt64 {
        var lines = JSONLine.split(bytes)[...]
        while lines.last?.isBlank == true { lines.removeLast() }
        guard let header = lines.popFirst() else {
            findings.append(Finding(path: file.path, line: 1, byte: 0, reason: "the file is empty"))
            return 0
        }
        var counted: Int?
        var journal: UInt64 = 0
        do throws(SnapshotFile.Failure) {
            (counted, journal) = try file.readHeader(header)
        } catch {
            note(error)
        }
        var read = 0
        for line in lines {
            if line.isBlank {
                findings.append(Finding(path: file.path, line: line.number, byte: line.offset, reason: "a blank line among the sessions"))
                continue
            }
            do throws(SnapshotFile.Failure) {
                let session = try file.readSession(line, tag: tag)
                guard states[session.id] == nil else {
                    findings.append(Finding(path: file.path, line: line.number, byte: line.offset, reason: "session \(SnapshotFile.shortened(session.id)) appears twice"))
                    continue
                }
                states[session.id] = session.state
                order.append(session.id)
                read += 1
            } catch {
                note(error)
            }
        }
        if let counted, counted != lines.count {
            findings.append(Finding(path: file.path, line: 1, byte: 0,
                                    reason: "the header counts \(counted) sessions, the file holds \(lines.count) lines of sessions"))
        }
        return journal
    }

    private mutating func readJournal(_ files: JournalFiles, _ number: UInt64, into states: inout [SessionID: ChromeState],
                                      order: inout [SessionID], tag: StateTag) {
        let path = files.path(number)
        let reader = SnapshotFile(path: path)
        let bytes: [UInt8]
        do throws(SnapshotFile.Failure) {
            bytes = try SnapshotFile.readAll(path) ?? []
        } catch {
            note(error)
            return
        }
        var lines = JSONLine.split(bytes)[...]
        if let last = lines.last, !last.isTerminated {
            torn.append(.init(path: path, line: last.number, byte: last.offset, length: last.bytes.count))
            lines.removeLast()
        }
        guard let header = lines.popFirst() else { return }
        do throws(SnapshotFile.Failure) {
            try files.readHeader(header, reader: reader, number: number)
        } catch {
            note(error)
        }
        for line in lines {
            do throws(SnapshotFile.Failure) {
                let record = try files.readRecord(line, reader: reader, tag: tag)
                if states[record.id] == nil, record.state != nil { order.append(record.id) }
                states[record.id] = record.state
                records += 1
            } catch {
                note(error)
            }
        }
    }

    /// Writes what was read as a new snapshot, atomically, after keeping
    /// the old snapshot and journals under `<name>.before-repair-<time>`;
    /// returns the names they were kept under. The new snapshot names a
    /// journal after every one read, so none of them is read again.
    public func repair() throws(SnapshotFile.Failure) -> [String] {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let suffix = ".before-repair-\(now.tv_sec)"
        var kept: [String] = []
        if snapshotExists {
            guard link(file.path, file.path + suffix) == 0 else {
                throw .unwritable(path: file.path + suffix, reason: String(cString: strerror(errno)))
            }
            kept.append(file.path + suffix)
        }
        let files = JournalFiles(snapshot: file)
        let all = files.numbers()
        try file.write(sessions, journal: (all.last ?? 0) + 1)
        for number in all {
            let path = files.path(number)
            if rename(path, path + suffix) == 0 { kept.append(path + suffix) }
        }
        file.syncFolder()
        return kept
    }
}
