import Foundation
import TopChromeCore

/// The vertical reports that waited for one request, in order, each
/// numbered (`seq`) when it was made.
///
/// Every report goes, not only the newest. Where the behaviour tracks the
/// finger (`enterAlways`) the chrome moves by each delta within its height,
/// and where it snaps only a gesture's end settles it: the state depends on
/// the path, and the service must walk the path the app predicted, or the
/// prediction and the answer part. The service applies a batch as one unit,
/// so it still costs one request, and one version at most per change a
/// watcher sees.
///
/// A batch is sized by its encoded bytes, not by its count: fractional
/// offsets with a phase make a report some 90 bytes, so a count that fits
/// with integers overflows the service's body limit with decimals.
struct ScrollBatch: Sendable {
    /// The most reports the service takes in one request.
    static let limit = 1024

    private(set) var reports: [ScrollReportBody]
    /// The reports' own encoded bytes, without the array's brackets and commas.
    private var reportBytes: Int

    init(_ report: ScrollReportBody) {
        reports = [report]
        reportBytes = Self.encodedBytes(of: report)
    }

    private init(_ reports: ArraySlice<ScrollReportBody>) {
        self.reports = Array(reports)
        reportBytes = reports.reduce(0) { $0 + Self.encodedBytes(of: $1) }
    }

    var count: Int { reports.count }
    var lastSeq: UInt64? { reports.last?.seq }
    var seqs: [UInt64] { reports.map(\.seq) }

    /// The bytes of the body `body()` writes (an array; brackets and commas included).
    var bodyBytes: Int { reports.count == 1 ? reportBytes : reportBytes + reports.count + 1 }

    /// Whether `later` can join this batch in one body of at most `maximumBytes`.
    func canTake(_ later: ScrollBatch, within maximumBytes: Int) -> Bool {
        count + later.count <= Self.limit
            && reportBytes + later.reportBytes + count + later.count + 1 <= maximumBytes
    }

    mutating func append(_ later: ScrollBatch) {
        reports += later.reports
        reportBytes += later.reportBytes
    }

    /// The oldest `count` reports, taken out: what an outage too long to keep drops.
    mutating func removeOldest(_ count: Int) -> [UInt64] {
        let dropped = reports.prefix(count)
        reports.removeFirst(dropped.count)
        reportBytes -= dropped.reduce(0) { $0 + Self.encodedBytes(of: $1) }
        return dropped.map(\.seq)
    }

    /// The first half and the rest, in order: what a batch the service
    /// found too large is sent as instead.
    func halves() -> (ScrollBatch, ScrollBatch) {
        let middle = reports.count / 2
        return (ScrollBatch(reports[..<middle]), ScrollBatch(reports[middle...]))
    }

    /// Numbers every report again, in order, from `next`: for a batch the
    /// service found entirely stale (another life of the session numbered higher).
    mutating func renumber(_ next: () -> UInt64) {
        for index in reports.indices { reports[index].seq = next() }
        reportBytes = reports.reduce(0) { $0 + Self.encodedBytes(of: $1) }
    }

    /// One report as an object, as before batches; more as an array.
    func body() throws -> Data {
        if reports.count == 1 { return try ChromeService.encode(reports[0]) }
        return try ChromeService.encode(reports)
    }

    private static func encodedBytes(of report: ScrollReportBody) -> Int {
        (try? JSONEncoder().encode(report).count) ?? 0
    }
}

/// One report as the API reads it. `JSONEncoder` leaves out what is nil.
struct ScrollReportBody: Encodable, Sendable {
    var contentOffsetY: Double
    var contentInsetTop: Double
    var seq: UInt64
    var phase: ScrollReport.Phase.RawValue?
    var contentHeight: Double?
    var viewportHeight: Double?
}
