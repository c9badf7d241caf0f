import Foundation
import Testing
import TopChromeClient
import TopChromeCore

/// An app that imports the core beside the client (issue 37 item 9) names
/// every type without ambiguity: the client's state is `SessionState`, the
/// core's `ChromeState`; behaviours, reports and axes are one type each,
/// versions one integer type; and the module's name qualifies its types,
/// no class of that name standing in the way.
@Suite struct NamesTests {
    @Test func bothModulesImportedNameEachTypeOnce() throws {
        let core = ChromeState(inset: 59, settings: RevealSettings(behavior: .enterAlways))
        let served: SessionState = try JSONDecoder().decode(SessionState.self, from: Data("""
            {"id":"\(String(repeating: "a", count: 32))","inset":59,"isRevealed":true,"version":1,"behavior":"enterAlways"}
            """.utf8))
        #expect(served.version == core.version, "one version type")
        #expect(served.behavior == core.behavior, "one behaviour type")
        let axis: ScrollAxis = .horizontal
        #expect(axis == ScrollReport.Axis.horizontal, "one axis type")
        let qualified: TopChromeClient.SessionState = served
        let coreQualified: TopChromeCore.ChromeState = core
        #expect(qualified.inset == coreQualified.inset)
        let service: TopChromeClient.ChromeService.Type = ChromeService.self
        #expect(service == ChromeService.self)
    }
}
