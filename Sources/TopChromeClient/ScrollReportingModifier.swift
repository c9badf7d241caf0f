// SwiftUI only where it exists: Apple's platforms. Not compiled on Linux,
// where its logic (ScrollReporting) is tested.
#if canImport(SwiftUI)
import SwiftUI

@available(iOS 18, macOS 15, tvOS 18, watchOS 11, visionOS 2, *)
extension View {
    /// Wires the chrome to this scroll view in one line: reports its
    /// geometry as it moves and `phase: .ended` when a gesture ends (for
    /// `snap`), follows the service's states while the view is shown, and
    /// tells the service when it goes away. Put it on the outer vertical
    /// `ScrollView`, never on a horizontal row.
    public func reportsTopChrome(to chrome: RemoteTopChrome) -> some View {
        modifier(TopChromeScrollReporting(chrome: chrome))
    }
}

@available(iOS 18, macOS 15, tvOS 18, watchOS 11, visionOS 2, *)
private struct TopChromeScrollReporting: ViewModifier {
    let chrome: RemoteTopChrome
    @State private var reporting = ScrollReporting()

    func body(content: Content) -> some View {
        content
            .onScrollGeometryChange(for: ScrollReporting.Geometry.self, of: { geometry in
                ScrollReporting.Geometry(contentOffsetY: Double(geometry.contentOffset.y),
                                         contentInsetTop: Double(geometry.contentInsets.top),
                                         contentHeight: Double(geometry.contentSize.height),
                                         viewportHeight: Double(geometry.containerSize.height))
            }, action: { _, geometry in
                if let report = reporting.moved(to: geometry) { chrome.report(report) }
            })
            .onScrollPhaseChange { _, phase in
                if let report = reporting.phaseChanged(isMoving: phase != .idle) { chrome.report(report) }
            }
            .task { await chrome.follow() }
            .onDisappear { chrome.disappear() }
    }
}
#endif
