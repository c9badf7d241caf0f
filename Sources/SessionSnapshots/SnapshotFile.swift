#if canImport(Glibc)
import Glibc
#endif
import StrictJSON
import TopChromeCore

/// Sessions kept in a file across restarts.
///
/// The file is JSON Lines: a header naming the format and the number of
/// sessions, then one session per line. It is replaced atomically (a temp
/// file of its own beside it, fsync, rename, fsync of the folder), so a
/// crash leaves either the old snapshot or the new one, never half of one;
/// the count in the header catches a file cut short by other means. Writes
/// that may overlap go through one ``SnapshotWriter``.
public struct SnapshotFile: Sendable {
    public static let format = "topchrome-sessions"
    public static let formatVersion = 1

    public enum Failure: Error, Equatable, CustomStringConvertible {
        case unreadable(path: String, reason: String)
        /// `byte` is the offset in the file where the trouble is, for `dd`,
        /// `truncate` or an editor's goto.
        case corrupt(path: String, line: Int, byte: Int, reason: String)
        /// More sessions than `--max-sessions` lets the store hold.
        case tooManySessions(path: String, count: Int, limit: Int)
        case unwritable(path: String, reason: String)

        public var description: String {
            switch self {
            case let .unreadable(path, reason): "cannot read state file '\(path)': \(reason)"
            case let .corrupt(path, line, byte, reason):
                "state file '\(path)' is not valid (line \(line), byte \(byte): \(reason)); it was left untouched"
            case let .tooManySessions(path, count, limit):
                "state file '\(path)' holds \(count) sessions, more than --max-sessions \(limit); it was left untouched"
            case let .unwritable(path, reason): "cannot write state file '\(path)': \(reason)"
            }
        }
    }

    /// What a snapshot holds: its sessions, and the number of the journal
    /// that goes on from it (see ``JournalFiles``).
    public struct Contents: Sendable, Equatable {
        public var sessions: [Session]
        public var journal: UInt64
        /// Whether there was a file at all.
        public var exists: Bool
    }

    public let path: String
    /// Called with the temp file open and nothing written yet: tests hold a
    /// write there to overlap it with another, deterministically.
    var pauseWhileWriting: (@Sendable () -> Void)?

    public init(path: String) {
        self.path = path
    }

    /// Why the reader would refuse `state`, if it would; the writer asks
    /// too, so that it never writes a file the next start cannot load.
    static func problem(with state: ChromeState) -> String? {
        if !ChromeState.allowedInsets.contains(state.inset) { return "no valid inset" }
        if !ChromeState.allowedVersions.contains(state.version) { return "no valid version" }
        if let seq = state.lastAppliedSeq, !ScrollReport.allowedSeqs.contains(seq) { return "no valid lastSeq" }
        if let height = state.chosenCollapsibleHeight, !RevealSettings.allowedCollapsibleHeights.contains(height) {
            return "no valid collapsibleHeight"
        }
        if !(-RevealSettings.allowedCollapsibleHeights.upperBound...0).contains(state.trackedHeightOffset) {
            return "no valid heightOffset"
        }
        if let offset = state.lastOffset, !offset.isFinite { return "no valid lastOffset" }
        return nil
    }

    /// The sessions in the file; none if there is no file yet (a first start).
    /// The file keeps no tags: the file may be older than what clients saw,
    /// so its states take the tag of the store they go back into (see `StateTag`).
    public func read(taggedWith tag: StateTag) throws(Failure) -> [Session] {
        try readContents(taggedWith: tag).sessions
    }

    /// The sessions and the journal number. Blank lines at the end (an
    /// editor's) are let be; anywhere else a line must be a session.
    public func readContents(taggedWith tag: StateTag) throws(Failure) -> Contents {
        guard let bytes = try Self.readAll(path) else { return Contents(sessions: [], journal: 0, exists: false) }
        var lines = JSONLine.split(bytes)[...]
        while lines.last?.isBlank == true { lines.removeLast() }
        guard let header = lines.popFirst() else { throw corrupt(1, 0, "the file is empty") }
        let (count, journal) = try readHeader(header)
        var sessions: [Session] = []
        sessions.reserveCapacity(min(count, lines.count))
        var seen = Set<SessionID>()
        for line in lines {
            if line.isBlank { throw corrupt(line, "a blank line among the sessions") }
            let session = try readSession(line, tag: tag)
            guard seen.insert(session.id).inserted else { throw corrupt(line, "session \(Self.shortened(session.id)) appears twice") }
            sessions.append(session)
        }
        guard sessions.count == count else {
            throw corrupt(header, "the header counts \(count) session\(count == 1 ? "" : "s"), the file holds \(sessions.count)")
        }
        return Contents(sessions: sessions, journal: journal, exists: true)
    }

    /// Replaces the file with `sessions`, atomically. A session the reader
    /// would refuse fails the write and leaves the file as it was.
    /// - Parameter journal: the journal that goes on from this snapshot.
    public func write(_ sessions: [Session], journal: UInt64 = 0) throws(Failure) {
        for session in sessions {
            if let problem = Self.problem(with: session.state) {
                throw .unwritable(path: path, reason: "session \(Self.shortened(session.id)) has \(problem): \(session.state)")
            }
        }
        var writer = JSONWriter(capacity: 64 + sessions.count * 96)
        writer.object { object in
            object.member("format") { $0.string(Self.format) }
            object.member("version") { $0.number(Self.formatVersion) }
            object.member("count") { $0.number(sessions.count) }
            if journal > 0 { object.member("journal") { $0.number(Double(journal)) } }
        }
        writer.raw("\n")
        for session in sessions {
            Self.writeSession(session.id, session.state, to: &writer)
            writer.raw("\n")
        }
        try replace(with: writer.bytes)
    }

    static func writeSession(_ id: SessionID, _ state: ChromeState, to writer: inout JSONWriter) {
        writer.object { object in
            object.member("id") { $0.string(id.description) }
            object.member("inset") { $0.number(state.inset) }
            object.member("isRevealed") { $0.bool(state.isRevealed) }
            object.member("version") { $0.number(state.version) }
            if let seq = state.lastAppliedSeq { object.member("lastSeq") { $0.number(seq) } }
            writeBehavior(of: state, to: &object)
        }
    }

    // MARK: Reading

    /// The file's bytes; nil if there is no file.
    static func readAll(_ path: String) throws(Failure) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw .unreadable(path: path, reason: String(cString: strerror(errno)))
        }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = Glibc.read(fd, &chunk, chunk.count)
            if count < 0 {
                if errno == EINTR { continue }
                throw .unreadable(path: path, reason: String(cString: strerror(errno)))
            }
            if count == 0 { return bytes }
            bytes.append(contentsOf: chunk[..<count])
        }
    }

    /// An id as every log names it, its first 8 hex digits: enough to find
    /// the line in the file, not enough to take the session over.
    static func shortened(_ id: SessionID) -> String {
        String(id.description.prefix(8))
    }

    func corrupt(_ line: Int, _ byte: Int, _ reason: String) -> Failure {
        .corrupt(path: path, line: line, byte: byte, reason: reason)
    }

    func corrupt(_ line: JSONLine, at offset: Int = 0, _ reason: String) -> Failure {
        .corrupt(path: path, line: line.number, byte: line.offset + offset, reason: reason)
    }

    /// A member the reader does not know is refused, not dropped: it may be
    /// a hand edit that meant something (a typo of `isRevealed`), and the
    /// next write would silently lose it.
    func object(_ line: JSONLine, allowed: Set<String>) throws(Failure) -> [String: JSONValue] {
        let value: JSONValue
        do {
            value = try JSONReader.parse(Array(line.bytes))
        } catch {
            throw corrupt(line, at: error.offset, "malformed JSON: \(error.message)")
        }
        guard case let .object(members) = value else { throw corrupt(line, "not a JSON object") }
        if let unknown = members.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw corrupt(line, "unknown member '\(unknown)'")
        }
        return members
    }

    func readHeader(_ line: JSONLine) throws(Failure) -> (count: Int, journal: UInt64) {
        let header = try object(line, allowed: ["format", "version", "count", "journal"])
        guard header["format"] == .string(Self.format) else { throw corrupt(line, "not a \(Self.format) file") }
        guard case let .number(version, _) = header["version"], version == Double(Self.formatVersion) else {
            throw corrupt(line, "unknown format version")
        }
        guard case let .number(count, _) = header["count"], count >= 0, count == count.rounded(), count < 1e9 else {
            throw corrupt(line, "no valid session count")
        }
        var journal: UInt64 = 0
        if let value = header["journal"] {
            guard case let .number(_, literal) = value, let number = UInt64(literal) else { throw corrupt(line, "no valid journal number") }
            journal = number
        }
        return (Int(count), journal)
    }

    func readSession(_ line: JSONLine, tag: StateTag) throws(Failure) -> Session {
        try readSession(line, members: object(line, allowed: Self.sessionMembers), tag: tag)
    }

    func readSession(_ line: JSONLine, members: [String: JSONValue], tag: StateTag) throws(Failure) -> Session {
        guard case let .string(text) = members["id"], let id = SessionID(text) else { throw corrupt(line, "no valid id") }
        guard case let .number(inset, _) = members["inset"] else { throw corrupt(line, "no valid inset") }
        guard case let .bool(isRevealed) = members["isRevealed"] else { throw corrupt(line, "no valid isRevealed") }
        guard case let .number(_, literal) = members["version"], let version = UInt64(literal) else {
            throw corrupt(line, "no valid version")
        }
        var lastSeq: UInt64?
        if let seq = members["lastSeq"] {
            guard case let .number(_, literal) = seq, let exact = UInt64(literal) else { throw corrupt(line, "no valid lastSeq") }
            lastSeq = exact
        }
        let state = try readBehavior(members, line: line,
                                     into: ChromeState(inset: inset, isRevealed: isRevealed, version: version, lastAppliedSeq: lastSeq))
        if let problem = Self.problem(with: state) { throw corrupt(line, problem) }
        return Session(id: id, state: state, tag: tag)
    }

    // MARK: Writing

    /// Temp files are named after the state file, then this and six
    /// characters that make each write's file its own: two writes never
    /// share one, so neither can cut the other's short or rename it away.
    private static let temporaryMarker = ".tmp-"

    private func replace(with bytes: [UInt8]) throws(Failure) {
        var template = Array((path + Self.temporaryMarker + "XXXXXX").utf8CString)
        let fd = mkstemp(&template)
        guard fd >= 0 else { throw unwritable() }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        let temporary = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        pauseWhileWriting?()
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else {
                let failure = unwritable()
                close(fd)
                unlink(temporary)
                throw failure
            }
            written += count
        }
        // Closed even when the sync failed: a disk that keeps failing would
        // otherwise cost a descriptor every interval.
        let syncFailure: Failure? = fsync(fd) == 0 ? nil : unwritable()
        let closed = close(fd) == 0
        if let failure = syncFailure ?? (closed ? nil : unwritable()) {
            unlink(temporary)
            throw failure
        }
        guard rename(temporary, path) == 0 else {
            let failure = unwritable()
            unlink(temporary)
            throw failure
        }
        // The rename itself is durable only once the folder is synced.
        syncFolder()
    }

    /// Makes a rename, a new file or an unlink in the folder durable.
    func syncFolder() {
        let folder = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if folder >= 0 {
            fsync(folder)
            close(folder)
        }
    }

    /// Checks that snapshots can be written here, by writing a temp file
    /// beside the state file and removing it, and that the filesystem has
    /// room for one as large as the file now (an empty file still fits on a
    /// full disk). At start: a folder that does not exist (a typo), is
    /// read-only or full would otherwise be found only by the first
    /// snapshot, and every session would be lost at the stop.
    public func checkWritable() throws(Failure) {
        var template = Array((path + Self.temporaryMarker + "XXXXXX").utf8CString)
        let fd = mkstemp(&template)
        guard fd >= 0 else {
            let reason = String(cString: strerror(errno))
            throw .unwritable(path: path, reason: "its folder '\(directory)' cannot take a file (\(reason))")
        }
        close(fd)
        unlink(template)
        var existing = stat()
        let needed = Int(stat(path, &existing) == 0 ? existing.st_size : 0) + Self.roomBeyondTheFile
        var filesystem = statvfs()
        if statvfs(directory, &filesystem) == 0 {
            let free = Int(filesystem.f_bavail) * Int(filesystem.f_frsize)
            if free < needed {
                throw .unwritable(path: path, reason: "its folder '\(directory)' has no room for a snapshot (\(free) bytes free, \(needed) needed)")
            }
        }
    }

    /// What a snapshot may outgrow the file by, and a journal's first records.
    static let roomBeyondTheFile = 64 << 10

    /// Removes temp files that writers of this state file left behind (a
    /// `kill -9` or power loss during a write); returns how many. Only for
    /// when no write can be under way, i.e. at start.
    @discardableResult
    public func removeLeftovers() -> Int {
        guard let folder = opendir(directory) else { return 0 }
        defer { closedir(folder) }
        let prefix = fileName + Self.temporaryMarker
        var removed = 0
        while let entry = readdir(folder) {
            let name = String(cString: (UnsafeRawPointer(entry) + MemoryLayout<dirent>.offset(of: \dirent.d_name)!)
                .assumingMemoryBound(to: CChar.self))  // in place: a record is only as long as its name
            guard name.hasPrefix(prefix), name.utf8.count == prefix.utf8.count + 6 else { continue }
            if unlink(directory + "/" + name) == 0 { removed += 1 }
        }
        return removed
    }

    var fileName: String {
        path.lastIndex(of: "/").map { String(path[path.index(after: $0)...]) } ?? path
    }

    var directory: String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    private func unwritable() -> Failure {
        .unwritable(path: path, reason: String(cString: strerror(errno)))
    }
}
