#if canImport(Glibc)
import Glibc
#endif
import StrictJSON
import TopChromeCore

/// The journals beside a state file: what changed since its snapshot, so
/// that a `kill -9` loses only what was not yet flushed (a second, by
/// default) rather than everything since the last snapshot.
///
/// Each journal is `<state file>.journal-<N>`, JSON Lines: a header naming
/// the format and N, then one record per line — a session's whole state as
/// the snapshot writes it, or `{"id":…,"removed":true}` for a session
/// deleted or expired, so that an older snapshot cannot bring it back.
/// A snapshot's header names the journal begun just before its sessions
/// were collected; a start reads the snapshot, then every journal from
/// that number on, in order: the last record of a session is its state.
/// Journals before the snapshot's number are already in it.
public struct JournalFiles: Sendable {
    public static let format = "topchrome-journal"
    public static let formatVersion = 1

    public let snapshot: SnapshotFile

    public init(snapshot: SnapshotFile) {
        self.snapshot = snapshot
    }

    /// One change as the journal keeps it: a session's state, or its removal.
    public struct Record: Sendable, Equatable {
        public var id: SessionID
        /// Nil when the session is gone.
        public var state: ChromeState?

        public init(id: SessionID, state: ChromeState?) {
            self.id = id
            self.state = state
        }
    }

    /// A last record cut short (power lost or a disk full mid-write): it was
    /// never acknowledged as durable, so a start drops it and says so.
    public struct TornRecord: Sendable, Equatable, CustomStringConvertible {
        public var path: String
        public var line: Int
        public var byte: Int
        public var length: Int

        public var description: String {
            "'\(path)' line \(line), byte \(byte): a last record cut short (\(length) byte\(length == 1 ? "" : "s")) was dropped"
        }
    }

    /// A journal's records, and a torn last one if there was.
    public struct Reading: Sendable {
        public var records: [Record]
        public var torn: TornRecord?
    }

    public func path(_ number: UInt64) -> String {
        snapshot.path + ".journal-" + String(number)
    }

    /// The numbers of the journals beside the state file, in order.
    public func numbers() -> [UInt64] {
        guard let folder = opendir(snapshot.directory) else { return [] }
        defer { closedir(folder) }
        let prefix = snapshot.fileName + ".journal-"
        var numbers: [UInt64] = []
        while let entry = readdir(folder) {
            let name = String(cString: (UnsafeRawPointer(entry) + MemoryLayout<dirent>.offset(of: \dirent.d_name)!)
                .assumingMemoryBound(to: CChar.self))  // in place: a record is only as long as its name
            guard name.hasPrefix(prefix), let number = UInt64(name.dropFirst(prefix.count)),
                  String(number) == name.dropFirst(prefix.count) else { continue }
            numbers.append(number)
        }
        return numbers.sorted()
    }

    static func header(_ number: UInt64) -> [UInt8] {
        var writer = JSONWriter(capacity: 80)
        writer.object { object in
            object.member("format") { $0.string(format) }
            object.member("version") { $0.number(formatVersion) }
            object.member("journal") { $0.number(Double(number)) }
        }
        writer.raw("\n")
        return writer.bytes
    }

    /// Journal `number`'s records. A torn last record is left out and
    /// named; anything else that is not a record is refused, naming the
    /// line and byte (the reader of its snapshot's lines, with its rules).
    public func read(_ number: UInt64, taggedWith tag: StateTag) throws(SnapshotFile.Failure) -> Reading {
        let path = path(number)
        let reader = SnapshotFile(path: path)
        guard let bytes = try SnapshotFile.readAll(path) else { return Reading(records: [], torn: nil) }
        var lines = JSONLine.split(bytes)[...]
        var torn: TornRecord?
        if let last = lines.last, !last.isTerminated {
            torn = TornRecord(path: path, line: last.number, byte: last.offset, length: last.bytes.count)
            lines.removeLast()
        }
        guard let header = lines.popFirst() else { return Reading(records: [], torn: torn) }
        try readHeader(header, reader: reader, number: number)
        var records: [Record] = []
        records.reserveCapacity(lines.count)
        for line in lines { records.append(try readRecord(line, reader: reader, tag: tag)) }
        return Reading(records: records, torn: torn)
    }

    func readHeader(_ header: JSONLine, reader: SnapshotFile, number: UInt64) throws(SnapshotFile.Failure) {
        let members = try reader.object(header, allowed: ["format", "version", "journal"])
        guard members["format"] == .string(Self.format) else { throw reader.corrupt(header, "not a \(Self.format) file") }
        guard case let .number(version, _) = members["version"], version == Double(Self.formatVersion) else {
            throw reader.corrupt(header, "unknown format version")
        }
        guard case let .number(_, literal) = members["journal"], UInt64(literal) == number else {
            throw reader.corrupt(header, "the header's journal number is not the file name's \(number)")
        }
    }

    func readRecord(_ line: JSONLine, reader: SnapshotFile, tag: StateTag) throws(SnapshotFile.Failure) -> Record {
        let members = try reader.object(line, allowed: SnapshotFile.sessionMembers.union(["removed"]))
        if let removed = members["removed"] {
            guard removed == .bool(true), members.count == 2, case let .string(text) = members["id"], let id = SessionID(text) else {
                throw reader.corrupt(line, "a removal holds only an id and \"removed\":true")
            }
            return Record(id: id, state: nil)
        }
        let session = try reader.readSession(line, members: members, tag: tag)
        return Record(id: session.id, state: session.state)
    }
}
