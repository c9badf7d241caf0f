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
struct ScrollBatch: Sendable {
    /// The most reports the service takes in one request. A longer wait (an
    /// outage) drops the oldest: the service's answer then differs from the
    /// prediction, and wins, as any answer does.
    static let limit = 1024

    private(set) var reports: [ScrollReportBody]

    init(_ report: ScrollReportBody) {
        reports = [report]
    }

    var count: Int { reports.count }
    var lastSeq: UInt64? { reports.last?.seq }

    mutating func append(_ later: ScrollBatch) {
        reports += later.reports
        if reports.count > Self.limit { reports.removeFirst(reports.count - Self.limit) }
    }

    /// Numbers every report again, in order, from `next`: for a batch the
    /// service found entirely stale (another life of the session numbered higher).
    mutating func renumber(_ next: () -> UInt64) {
        for index in reports.indices { reports[index].seq = next() }
    }

    /// One report as an object, as before batches; more as an array.
    func body() throws -> Data {
        if reports.count == 1 { return try TopChromeClient.encode(reports[0]) }
        return try TopChromeClient.encode(reports)
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
