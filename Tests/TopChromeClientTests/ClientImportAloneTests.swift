import Foundation
import Testing
import TopChromeClient

/// `import TopChromeClient` alone names everything an app passes to it:
/// the behaviour, a report's phase and axis (issue 37 item 9).
@Suite struct ClientImportAloneTests {
    @Test func theCoresTypesAnAppNamesComeWithTheClient() {
        let behavior: RevealBehavior = .enterAlways
        let phase: ScrollReport.Phase = .ended
        let axis: ScrollAxis = .vertical
        #expect([behavior.rawValue, phase.rawValue, axis.rawValue] == ["enterAlways", "ended", "vertical"])
    }
}
