/// What a scroll view's geometry and phases come to as reports: the half of
/// `View.reportsTopChrome(to:)` that is not SwiftUI, so that it is tested
/// where SwiftUI is not. Every move is reported as it comes; the end of a
/// gesture (the scroll view idle again after the finger moved it, its
/// deceleration included) is reported once more with `phase: .ended`,
/// which `snap` settles on.
struct ScrollReporting {
    /// Where the outer vertical scroll view stands, in its own coordinates
    /// (UIKit's: the offset is minus the top inset at the top).
    struct Geometry: Hashable {
        var contentOffsetY: Double
        var contentInsetTop: Double
        var contentHeight: Double
        var viewportHeight: Double
    }

    /// A report to hand to `RemoteTopChrome.report`.
    struct Report: Hashable {
        var geometry: Geometry
        var phase: ScrollReport.Phase?
    }

    private var last: Geometry?
    private var moving = false

    /// The geometry changed: report it, unless it is where the last report stood.
    mutating func moved(to geometry: Geometry) -> Report? {
        guard geometry != last else { return nil }
        last = geometry
        return Report(geometry: geometry, phase: nil)
    }

    /// The scroll view's phase changed (`isMoving`: anything but idle). The
    /// end of a movement, where one was reported, is reported as `.ended`.
    mutating func phaseChanged(isMoving: Bool) -> Report? {
        defer { moving = isMoving }
        guard moving, !isMoving, let last else { return nil }
        return Report(geometry: last, phase: .ended)
    }
}

extension RemoteTopChrome {
    func report(_ report: ScrollReporting.Report) {
        self.report(contentOffsetY: report.geometry.contentOffsetY, contentInsetTop: report.geometry.contentInsetTop,
                    phase: report.phase, contentHeight: report.geometry.contentHeight,
                    viewportHeight: report.geometry.viewportHeight)
    }
}
